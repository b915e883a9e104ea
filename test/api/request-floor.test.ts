/**
 * What the request floor's shortcuts must leave as it was: helmet's headers worked out once, the
 * validator's compiled route lookup, capability routers entered by first path segment, and
 * response validation as configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import { securityHeaders } from '../../src/http/security-headers.ts';
import {
  UNDECLARED_MEDIA_TYPE,
  declaredMediaTypes,
  literalFirstSegment,
  validatorContentType,
} from '../../src/http/validator-route-cache.ts';
import { loadValidationDocument } from '../../src/http/openapi-documents.ts';
import { loadConfig } from '../../src/config.ts';

let t: TestApp;
let id: string;

beforeAll(async () => {
  t = await createTestApp();
  id = 'nmdc:bsm-11-abc123';
  await t.store.upsertMany('biosample_set', [
    { id, type: 'nmdc:Biosample', name: 'one', associated_studies: ['nmdc:sty-11-aaa'], env_broad_scale: {} },
  ]);
});
afterAll(async () => t?.close());

describe('security headers worked out once', () => {
  it('sets exactly the headers helmet sets, with the same values', async () => {
    const options = {
      crossOriginOpenerPolicy: { policy: 'same-origin-allow-popups' as const },
      contentSecurityPolicy: { directives: { 'script-src': ["'self'"], 'upgrade-insecure-requests': null } },
    };
    const headersOf = async (mw: express.RequestHandler) => {
      const app = express();
      app.use((_req, res, next) => {
        res.setHeader('X-Powered-By', 'someone');
        next();
      });
      app.use(mw);
      app.get('/', (_req, res) => {
        res.type('text/plain').send('ok');
      });
      const res = await request(app).get('/').expect(200);
      const { date: _date, ...rest } = res.headers;
      return rest;
    };
    const fixed = await headersOf(securityHeaders(options));
    expect(fixed).toEqual(await headersOf(helmet(options)));
    expect(fixed['content-security-policy']).toContain("script-src 'self'");
    expect(fixed['x-powered-by']).toBeUndefined();
  });

  it('are on the service answers', async () => {
    const res = await request(t.app).get('/version').expect(200);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cross-origin-opener-policy']).toBe('same-origin-allow-popups');
    expect(res.headers['content-security-policy']).toContain("script-src 'self' 'unsafe-inline'");
  });
});

describe('the compiled route lookup and the capability routers', () => {
  it('reads literal first segments of path templates, unescaping them', () => {
    expect(literalFirstSegment('/nmdcschema/ids/:id')).toBe('nmdcschema');
    expect(literalFirstSegment('/queries\\:run')).toBe('queries:run');
    expect(literalFirstSegment('/:collection/x')).toBeUndefined();
    expect(literalFirstSegment('/{*rest}')).toBeUndefined();
    expect(literalFirstSegment('/')).toBe('');
  });

  it('gives the validator a media type the contract declares, a stand-in, or none: never the header', () => {
    const declared = declaredMediaTypes(loadValidationDocument());
    expect([...declared].sort()).toEqual([
      'application/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
    ]);
    const seen = new Set<string | undefined>();
    const headers = [
      undefined,
      '',
      ' ',
      'application/json',
      'Application/JSON; Charset=UTF-8',
      'multipart/form-data; boundary=----x1',
      `a/b${';'.repeat(16_000)}`,
      'a'.repeat(16_000),
    ];
    // Parameters and undeclared types that differ every time: each would have been a new compile.
    for (let i = 0; i < 200; i++) headers.push(`application/json; p${i}=${i}`, `application/x-kind-${i}`);
    for (const header of headers) seen.add(validatorContentType(header, declared));
    expect([...seen].sort()).toEqual(
      ['application/json', UNDECLARED_MEDIA_TYPE, 'multipart/form-data', undefined].sort(),
    );
    expect(validatorContentType('Application/JSON; Charset=UTF-8', declared)).toBe('application/json');
    expect(validatorContentType('a'.repeat(16_000), declared)).toBe(UNDECLARED_MEDIA_TYPE);
    expect(validatorContentType(' ', declared)).toBeUndefined();
  });

  it('answers alike whatever parameters the Content-Type carries, and names an undeclared type in a 415', async () => {
    for (const header of ['application/json', 'application/json; charset=utf-8; q=1', 'text/x-other; a=b']) {
      const res = await request(t.app)
        .get('/nmdcschema/collection_names')
        .set('Content-Type', header)
        .expect(200);
      expect(res.body).toContain('biosample_set');
    }
    const valid = await request(t.app)
      .post('/metadata/json:validate')
      .set('Content-Type', 'application/json; charset=utf-8; x=1')
      .send('{}')
      .expect(200);
    expect(valid.body).toEqual({ result: 'All Okay!' });
    const refused = await request(t.app)
      .post('/metadata/json:validate')
      .set('Content-Type', `application/${'x'.repeat(300)}`)
      .send('{}')
      .expect(415);
    expect(refused.body.detail).toBe(
      `Content-Type application/${'x'.repeat(88)}... is not accepted by POST /metadata/json:validate; send application/json`,
    );
  });

  it('finds templated operations with their decoded path parameters', async () => {
    const res = await request(t.app)
      .get(`/nmdcschema/ids/${encodeURIComponent(id)}`)
      .expect(200);
    expect(res.body).toMatchObject({ id, name: 'one' });
    const missing = await request(t.app).get('/nmdcschema/ids/nmdc%3Absm-11-none').expect(404);
    expect(missing.body.detail).toBeTruthy();
  });

  it('refuses a malformed escape in a path parameter with a 4xx and a detail', async () => {
    const res = await request(t.app).get('/nmdcschema/ids/%E0%A4%A').expect(422);
    expect(res.body.detail).toBeTruthy();
  });

  it('validates query parameters of the operation found', async () => {
    const res = await request(t.app).get('/biosamples?per_page=abc').expect(422);
    expect(JSON.stringify(res.body)).toContain('per_page');
  });

  it('reaches the last capability router and matches first segments case-insensitively as Express does', async () => {
    // The last router asks for a token: its 401 (not the service's 404) shows the request got there.
    const run = await request(t.app).post('/queries:run').send({ find: 'biosample_set' }).expect(401);
    expect(run.body.detail).toBeTruthy();
    const upper = await request(t.app).get('/VERSION').expect(200);
    const lower = await request(t.app).get('/version').expect(200);
    expect(upper.body).toEqual(lower.body);
  });

  it('still answers unknown paths with the 404 of the service', async () => {
    const res = await request(t.app).get('/no-such-thing/at/all').expect(404);
    expect(res.body.detail).toBeTruthy();
  });
});

describe('response validation', () => {
  it('is on by default and off by default in production, and can be set', () => {
    expect(loadConfig({}).validateResponses).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production' }).validateResponses).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', VALIDATE_RESPONSES: 'true' }).validateResponses).toBe(true);
    expect(loadConfig({ VALIDATE_RESPONSES: 'false' }).validateResponses).toBe(false);
    expect(() => loadConfig({ VALIDATE_RESPONSES: 'sometimes' })).toThrow(/VALIDATE_RESPONSES/);
  });

  it('turns an answer that breaks the contract into a 500 when on', async () => {
    const original = t.planner.count.bind(t.planner);
    // A count that is not an integer breaks the find answer's schema.
    t.planner.count = async () => 'many' as never;
    try {
      const res = await request(t.app).get('/biosamples').expect(500);
      expect(JSON.stringify(res.body)).toContain('count');
    } finally {
      t.planner.count = original;
    }
  });
});
