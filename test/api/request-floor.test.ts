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
import { literalFirstSegment } from '../../src/http/validator-route-cache.ts';
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
