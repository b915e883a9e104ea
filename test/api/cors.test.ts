/**
 * CORS through the whole app: simple and preflighted requests from an allowed origin, from one
 * outside the rule, and a configured list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';

let t: TestApp;
let listed: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  listed = await createTestApp({ CORS_ORIGINS: 'https://app.example.org' });
});
afterAll(async () => {
  await t?.close();
  await listed?.close();
});

describe('CORS with the default rule', () => {
  it('answers an allowed origin with credentials, reflecting the origin', async () => {
    const res = await request(t.app).get('/version').set('Origin', 'http://localhost:3000').expect(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-expose-headers']).toBe('X-Request-Id,Retry-After,WWW-Authenticate');
    expect(res.headers.vary).toMatch(/Origin/);
    expect(res.body).toHaveProperty('nmdc-schema');
  });

  it('answers a preflight for the methods and headers the SDK sends', async () => {
    const res = await request(t.app)
      .options('/users/me')
      .set('Origin', 'https://data.microbiomedata.org')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization,content-type')
      .expect(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://data.microbiomedata.org');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toBe('DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT');
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type');
    expect(res.headers['access-control-max-age']).toBe('600');
    expect(res.text).toBe('');
  });

  it('answers a preflight of a private POST with a colon in its path', async () => {
    const res = await request(t.app)
      .options('/queries:run')
      .set('Origin', 'https://microbiomedata.github.io')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type')
      .expect(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://microbiomedata.github.io');
  });

  it('refuses a preflight from an origin outside the rule with 400 and a detail', async () => {
    const res = await request(t.app)
      .options('/users/me')
      .set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'GET')
      .expect(400);
    expect(res.body).toEqual({ detail: 'Disallowed CORS origin' });
    expect(res.headers).not.toHaveProperty('access-control-allow-origin');
  });

  it('answers a simple request from an origin outside the rule without CORS headers', async () => {
    const res = await request(t.app).get('/version').set('Origin', 'https://evil.example').expect(200);
    expect(res.headers).not.toHaveProperty('access-control-allow-origin');
    expect(res.headers).not.toHaveProperty('access-control-allow-credentials');
  });

  it('adds nothing to requests without an Origin', async () => {
    const res = await request(t.app).get('/version').expect(200);
    expect(res.headers).not.toHaveProperty('access-control-allow-origin');
  });
});

describe('CORS with a configured list', () => {
  it('allows exactly the listed origins', async () => {
    const ok = await request(listed.app).get('/version').set('Origin', 'https://app.example.org').expect(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example.org');
    const other = await request(listed.app)
      .get('/version')
      .set('Origin', 'http://localhost:3000')
      .expect(200);
    expect(other.headers).not.toHaveProperty('access-control-allow-origin');
  });
});
