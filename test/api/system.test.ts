import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import { SCHEMA_VERSION } from '../../src/schema/nmdc.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ MAX_BODY_BYTES: '2048' });
});
afterAll(async () => t?.close());

describe('system endpoints and common behaviour', () => {
  it('reports liveness with the engines in use', async () => {
    const res = await request(t.app).get('/health').expect(200);
    expect(res.body).toEqual({
      status: 'ok',
      web_server: true,
      database: true,
      store: 'sqlite',
      search_index: 'sqlite-fts5',
      collections: 0,
    });
  });

  it('answers 503 with database false when the store does not answer', async () => {
    const original = t.store.nonEmptyCollections;
    t.store.nonEmptyCollections = async () => {
      throw new Error('connection lost');
    };
    try {
      const res = await request(t.app).get('/health').expect(503);
      expect(res.body).toEqual({
        status: 'unavailable',
        web_server: true,
        database: false,
        store: 'sqlite',
        search_index: 'sqlite-fts5',
      });
    } finally {
      t.store.nonEmptyCollections = original;
    }
  });

  it('reports the service, schema and API versions', async () => {
    const res = await request(t.app).get('/version').expect(200);
    expect(res.body).toEqual({ 'nmdc-runtime': '0.1.0', 'nmdc-schema': SCHEMA_VERSION, api: '2.13.0' });
  });

  it('answers unknown paths with 404 Not found', async () => {
    expect((await request(t.app).get('/no/such/thing').expect(404)).body).toEqual({ detail: 'Not found' });
  });

  it('gives every response a request id and security headers', async () => {
    const res = await request(t.app).get('/health').set('X-Request-Id', 'abc-123').expect(200);
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.headers).not.toHaveProperty('x-powered-by');
    const generated = await request(t.app).get('/health').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses bodies over the configured size with 413', async () => {
    const res = await request(t.app)
      .post('/queries:run')
      .send({ find: 'biosample_set', filter: { name: 'x'.repeat(4096) } })
      .expect(413);
    expect(res.body.detail).toContain('larger than the limit');
  });

  it('answers 422 for a body that is not JSON', async () => {
    const res = await request(t.app)
      .post('/queries:run')
      .set('Content-Type', 'application/json')
      .send('{nope')
      .expect(422);
    expect(res.body.detail).toContain('not valid JSON');
  });
});
