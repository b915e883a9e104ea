/**
 * The account endpoints through the whole app (request and response validation against
 * openapi.yaml included), in-process with supertest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import { createTestApp, type TestApp } from '../support/server.ts';

setBcryptCost(4);

describe('account endpoints in the app', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'root-password-1' });
    admin = login.body.access_token;
  });
  afterAll(async () => t.close());

  it('POST /token answers the contract shape for a password login', async () => {
    const res = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'root-password-1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'bearer',
      expires: { days: 1, hours: 0, minutes: 0 },
    });
  });

  it('POST /token answers 401 with WWW-Authenticate for wrong credentials', async () => {
    const res = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'nope' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.body).toEqual({ detail: 'Incorrect username or password' });
  });

  it('POST /token answers 422 for a grant type outside the contract', async () => {
    const res = await request(t.app).post('/token').type('form').send({ grant_type: 'implicit' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/grant_type/);
  });

  it('POST /token answers 429 with Retry-After once an account has too many failed attempts from one address', async () => {
    const saved = loginLimits.failuresPerAccountAndAddress;
    loginLimits.failuresPerAccountAndAddress = 2;
    try {
      const attempt = () =>
        request(t.app)
          .post('/token')
          .type('form')
          .send({ grant_type: 'password', username: 'victim', password: 'guess' });
      expect((await attempt()).status).toBe(401);
      expect((await attempt()).status).toBe(401);
      const blocked = await attempt();
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(blocked.body).toEqual({
        detail: 'Too many failed login attempts for this account from this address. Try again later.',
      });
    } finally {
      loginLimits.failuresPerAccountAndAddress = saved;
    }
  });

  it('GET /users/me answers the user, and 401 without a token', async () => {
    const me = await request(t.app).get('/users/me').set('Authorization', `Bearer ${admin}`);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ username: 'root', site_admin: ['nmdc-runtime-useradmin'], disabled: false });
    const anonymous = await request(t.app).get('/users/me');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ detail: 'Access token is invalid or missing. Please log in again.' });
  });

  it('POST /users creates a user (201, no password), then 409 for the same username', async () => {
    const body = { username: 'api-user', password: 'api-user-password', site_admin: ['api-lab'] };
    const created = await request(t.app).post('/users').set('Authorization', `Bearer ${admin}`).send(body);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ username: 'api-user', site_admin: ['api-lab'], disabled: false });
    expect(JSON.stringify(created.body)).not.toContain('api-user-password');
    const again = await request(t.app).post('/users').set('Authorization', `Bearer ${admin}`).send(body);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: 'User api-user already exists' });
  });

  it("makes administrators of the original's nmdc-runtime-useradmin, and of the former name svc-runtime-useradmin, runtime administrators", async () => {
    const { Accounts } = await import('../../src/accounts/index.ts');
    const accounts = new Accounts(t.store);
    // User records as the original keeps them, and as earlier releases of this service did.
    for (const [username, site] of [
      ['migrated-root', 'nmdc-runtime-useradmin'],
      ['old-root', 'svc-runtime-useradmin'],
    ] as const) {
      await accounts.createUser({ username, password: `${username}-password-1`, site_admin: [site] });
      const login = await request(t.app)
        .post('/token')
        .type('form')
        .send({ grant_type: 'password', username, password: `${username}-password-1` });
      const created = await request(t.app)
        .post('/users')
        .set('Authorization', `Bearer ${login.body.access_token}`)
        .send({ username: `made-by-${username}`, password: `made-by-${username}-password` });
      expect(created.status, `${site}: ${created.text}`).toBe(201);
    }
  });

  it('gives one 201 and one 409 when the same user or site is created twice at once', async () => {
    const auth = { Authorization: `Bearer ${admin}` };
    const users = await Promise.all(
      ['first of two racing', 'second of two racing'].map((password) =>
        request(t.app).post('/users').set(auth).send({ username: 'racer', password }),
      ),
    );
    expect(users.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(users.find((r) => r.status === 409)!.body).toEqual({ detail: 'User racer already exists' });
    // The stored password is the winner's.
    const winner = users[0]!.status === 201 ? 'first of two racing' : 'second of two racing';
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'racer', password: winner });
    expect(login.status).toBe(200);

    const sites = await Promise.all(
      [0, 1].map(() =>
        request(t.app).post('/sites').set(auth).send({ id: 'racing-site', capability_ids: [] }),
      ),
    );
    expect(sites.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(sites.find((r) => r.status === 409)!.body).toEqual({ detail: 'Site racing-site already exists' });
  });

  it('POST /users answers 422 when the password is missing', async () => {
    const res = await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username: 'no-password' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/password/);
  });

  it('POST /users answers 403 for a user who is not a runtime administrator', async () => {
    await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username: 'plain', password: 'plain-password' });
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'plain', password: 'plain-password' });
    const res = await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${login.body.access_token}`)
      .send({ username: 'x', password: 'a valid password for x' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'Only runtime administrators may create users' });
  });

  it('sites: create (201), read, 409 on the same id, 404 when absent, credentials for its administrator', async () => {
    const auth = { Authorization: `Bearer ${admin}` };
    const created = await request(t.app)
      .post('/sites')
      .set(auth)
      .send({ id: 'api-site', capability_ids: [] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: 'api-site', capability_ids: [] });
    expect((await request(t.app).get('/sites/api-site').set(auth)).body).toEqual({
      id: 'api-site',
      capability_ids: [],
    });
    const duplicate = await request(t.app).post('/sites').set(auth).send({ id: 'api-site' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toEqual({ detail: 'Site api-site already exists' });
    const missing = await request(t.app).get('/sites/absent-site').set(auth);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Not found' });

    const credentials = await request(t.app).post('/sites/api-site:generateCredentials').set(auth);
    expect(credentials.status).toBe(200);
    expect(Object.keys(credentials.body).sort()).toEqual(['client_id', 'client_secret']);
    const clientLogin = await request(t.app)
      .post('/token')
      .auth(credentials.body.client_id, credentials.body.client_secret)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expect(clientLogin.status).toBe(200);
    expect(clientLogin.body.token_type).toBe('bearer');
  });

  it('POST /logout revokes the presented token (204), after which it is invalidated', async () => {
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'root-password-1' });
    const token = login.body.access_token;
    const out = await request(t.app).post('/logout').set('Authorization', `Bearer ${token}`);
    expect(out.status).toBe(204);
    const after = await request(t.app).get('/users/me').set('Authorization', `Bearer ${token}`);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ detail: 'Access token has been invalidated. Please log in again.' });
  });

  it('serves the provider discovery document with the service as issuer', async () => {
    const res = await request(t.app).get('/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: t.config.publicUrl,
      token_endpoint: `${t.config.publicUrl}/oidc/token`,
      jwks_uri: `${t.config.publicUrl}/oidc/jwks`,
      authorization_endpoint: `${t.config.publicUrl}/oidc/auth`,
      revocation_endpoint: `${t.config.publicUrl}/oidc/token/revocation`,
    });
    expect(res.body.code_challenge_methods_supported).toEqual(['S256']);
  });
});

describe('password rules at POST /users', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({
      ADMIN_USERNAME: 'root',
      ADMIN_PASSWORD: 'root-password-1',
      PASSWORD_MIN_LENGTH: '14',
    });
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'root', password: 'root-password-1' });
    admin = login.body.access_token;
  });
  afterAll(async () => t.close());

  const createUser = (username: string, password: string) =>
    request(t.app).post('/users').set('Authorization', `Bearer ${admin}`).send({ username, password });

  it('answers 422 naming the length rule, from the contract below 12 and from PASSWORD_MIN_LENGTH above', async () => {
    const tiny = await createUser('tiny', 'a');
    expect(tiny.status).toBe(422);
    expect(tiny.body.detail).toMatch(/password must NOT have fewer than 12 characters/);
    const thirteen = await createUser('thirteen', 'estuary cores');
    expect(thirteen.status).toBe(422);
    expect(thirteen.body).toEqual({ detail: 'password must be at least 14 characters long' });
    const long = await createUser('long', 'x'.repeat(129));
    expect(long.status).toBe(422);
    expect(long.body.detail).toMatch(/password must NOT have more than 128 characters/);
    expect(await t.store.getById('users', 'thirteen')).toBeNull();
  });

  it('answers 422 for a common, username-made or guessable password, without echoing it', async () => {
    const answers = [
      [
        await createUser('common', 'qwerty123456789'),
        'password is one of the most common passwords found in breaches; choose another',
      ],
      [
        await createUser('marie.curie', 'Marie.Curie.1867'),
        "password must not be made of the username or the service's name",
      ],
    ] as const;
    for (const [res, detail] of answers) {
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ detail });
    }
    const repeated = await createUser('repeater', 'summersummersummer');
    expect(repeated.status).toBe(422);
    expect(repeated.body.detail).toMatch(/^password is too easy to guess \(it repeats a word or pattern\)/);
    expect(JSON.stringify(repeated.body)).not.toContain('summersummer');
  });

  it('accepts any characters and a 128-character password, which then logs in (bcrypt reads only 72 bytes)', async () => {
    const password = [...'🦠 estuary sediment 湿地の土壌 '.repeat(6)].slice(0, 118).join('') + ' échantil';
    expect([...password].length).toBeLessThanOrEqual(128);
    expect(Buffer.byteLength(password)).toBeGreaterThan(72);
    const created = await createUser('unicode-user', password);
    expect(created.status).toBe(201);
    const ok = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'unicode-user', password });
    expect(ok.status).toBe(200);
    // Same first 72 bytes, different ending: refused.
    const wrong = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'password', username: 'unicode-user', password: `${password.slice(0, -3)}xyz` });
    expect(wrong.status).toBe(401);
  });
});
