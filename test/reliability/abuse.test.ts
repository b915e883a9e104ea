/**
 * Abuse of accounts through the whole app: brute force, forged and stale tokens, privilege
 * boundaries, secrets in responses and logs, security headers and body limits.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { pino } from 'pino';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { createTestApp, type TestApp } from '../support/server.ts';
import { setBcryptCost } from '../../src/accounts/index.ts';

setBcryptCost(4);

const ADMIN = { username: 'abuse-admin', password: 'admin password that is long' };
const INVALID = 'Access token is invalid or missing. Please log in again.';
const logLines: string[] = [];
const secrets: string[] = [ADMIN.password];
let t: TestApp;
let serviceKey: JWK;
let adminToken: string;

async function rsaKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid };
}

async function login(username: string, password: string): Promise<string> {
  const res = await request(t.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username, password });
  expect(res.status).toBe(200);
  secrets.push(res.body.access_token);
  return res.body.access_token;
}

const as = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  serviceKey = await rsaKey('abuse-key');
  // Every log line of the whole scenario, start-up included, at the most talkative level.
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  t = await createTestApp(
    {
      ...{ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password },
      SIGNING_KEYS: JSON.stringify({ keys: [serviceKey] }),
      MAX_BODY_BYTES: '4096',
    },
    { logger: pino({ level: 'trace' }, sink) },
  );
  adminToken = await login(ADMIN.username, ADMIN.password);
});
afterAll(async () => t?.close());

describe('abuse of accounts', () => {
  it('rate limits brute force on /token with 429 and Retry-After', async () => {
    const statuses: number[] = [];
    let limited: request.Response | undefined;
    for (let i = 0; i < 15; i++) {
      const res = await request(t.app)
        .post('/token')
        .type('form')
        .send({ grant_type: 'password', username: 'victim', password: `guess-${i}` });
      statuses.push(res.status);
      if (res.status === 429) limited ??= res;
    }
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(10).every((s) => s === 429)).toBe(true);
    expect(Number(limited!.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited!.body.detail).toMatch(/Too many/);
  });

  it('answers 401 to a foreign signature, alg none, a wrong audience or issuer, an expired and a revoked token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const forge = async (claims: { iss?: string; aud?: string; exp?: number }, key: JWK = serviceKey) =>
      new SignJWT({ jti: `forged-${Math.random()}`, nmdc_principal: 'user' })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
        .setSubject(ADMIN.username)
        .setIssuer(claims.iss ?? t.config.publicUrl)
        .setAudience(claims.aud ?? `${t.config.publicUrl}/api`)
        .setIssuedAt(now - 120)
        .setExpirationTime(claims.exp ?? now + 60)
        .sign(await importJWK(key, 'RS256'));
    // The forging itself is right: the real key with the right claims is accepted.
    expect(
      (
        await request(t.app)
          .get('/users/me')
          .set(as(await forge({})))
      ).status,
    ).toBe(200);

    const payload = adminToken.split('.')[1];
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const cases: Array<[string, string, string | RegExp]> = [
      ['foreign key', await forge({}, await rsaKey('abuse-key')), INVALID],
      ['alg none', none, INVALID],
      ['wrong audience', await forge({ aud: 'urn:other-api' }), INVALID],
      // Signed with the service's key under another issuer: a token of an earlier PUBLIC_URL, said so.
      [
        'wrong issuer',
        await forge({ iss: 'http://127.0.0.1:9' }),
        /^Access token was issued by http:\/\/127\.0\.0\.1:9, but this service now names itself /,
      ],
      ['expired', await forge({ exp: now - 30 }), 'Access token has expired. Please log in again.'],
    ];
    for (const [, token, detail] of cases) {
      const res = await request(t.app).get('/users/me').set(as(token));
      expect(res.status).toBe(401);
      if (typeof detail === 'string') expect(res.body.detail).toBe(detail);
      else expect(res.body.detail).toMatch(detail);
    }
    const revoked = await login(ADMIN.username, ADMIN.password);
    await request(t.app)
      .post('/logout')
      .set(as(revoked))
      .expect((r) => expect(r.status).toBeLessThan(300));
    const res = await request(t.app).get('/users/me').set(as(revoked)).expect(401);
    expect(res.body.detail).toBe('Access token has been invalidated. Please log in again.');
  });

  it('keeps site administrators, users and runtime administrators within their rights', async () => {
    const alice = { username: 'alice-site-admin', password: 'alice password long enough' };
    const bob = { username: 'bob-site-admin', password: 'bob password long enough!' };
    for (const u of [alice, bob]) {
      await request(t.app).post('/users').set(as(adminToken)).send(u).expect(201);
      secrets.push(u.password);
    }
    const aliceToken = await login(alice.username, alice.password);
    const bobToken = await login(bob.username, bob.password);
    await request(t.app).post('/sites').set(as(aliceToken)).send({ id: 'alice-lab' }).expect(201);
    await request(t.app).post('/sites').set(as(bobToken)).send({ id: 'bob-lab' }).expect(201);

    const own = await request(t.app)
      .post('/sites/alice-lab:generateCredentials')
      .set(as(aliceToken))
      .expect(200);
    secrets.push(own.body.client_secret);
    const other = await request(t.app)
      .post('/sites/bob-lab:generateCredentials')
      .set(as(aliceToken))
      .expect(403);
    expect(other.body.detail).toBeTypeOf('string');

    const createUser = await request(t.app)
      .post('/users')
      .set(as(aliceToken))
      .send({ username: 'mallory', password: 'mallory password long' })
      .expect(403);
    expect(createUser.body.detail).toBeTypeOf('string');
    for (const body of [
      { update: 'biosample_set', updates: [{ q: {}, u: { $set: { name: 'x' } } }] },
      { delete: 'biosample_set', deletes: [{ q: {}, limit: 0 }] },
    ]) {
      const res = await request(t.app).post('/queries:run').set(as(aliceToken)).send(body).expect(403);
      expect(res.body.detail).toBe('Only specific users are allowed to issue update and delete commands.');
    }
    // The site client's secret works once exchanged, and is never shown again.
    const client = await request(t.app)
      .post('/token')
      .type('form')
      .send({
        grant_type: 'client_credentials',
        client_id: own.body.client_id,
        client_secret: own.body.client_secret,
      })
      .expect(200);
    secrets.push(client.body.access_token);
    const site = await request(t.app).get('/sites/alice-lab').set(as(aliceToken)).expect(200);
    expect(JSON.stringify(site.body)).not.toContain(own.body.client_secret);
  });

  it('sends the security headers on every kind of response', async () => {
    for (const [method, path] of [
      ['get', '/health'],
      ['get', '/biosamples/nmdc:bsm-11-nothere'],
      ['get', '/users/me'],
      ['post', '/token'],
      ['get', '/docs'],
    ] as const) {
      const res = await request(t.app)[method](path);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toContain("default-src 'self'");
      expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('answers 413 with a detail to bodies over the limit, JSON and form alike', async () => {
    const big = 'x'.repeat(8192);
    const json = await request(t.app)
      .post('/queries:run')
      .set(as(adminToken))
      .send({ find: 'study_set', pad: big });
    expect(json.status).toBe(413);
    expect(json.body.detail).toMatch(/larger than the limit/);
    const form = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: big, password: big });
    expect(form.status).toBe(413);
    expect(form.body.detail).toBeTypeOf('string');
  });

  it('never writes a password, client secret, token or bcrypt hash into a log line', () => {
    expect(logLines.length).toBeGreaterThan(20);
    const all = logLines.join('');
    for (const secret of secrets) expect(all).not.toContain(secret);
    expect(all).not.toMatch(/\$2[aby]\$\d\d\$/);
    expect(all).not.toMatch(/"(password|client_secret|authorization)"\s*:/i);
  });
});
