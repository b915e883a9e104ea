import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import {
  getJson,
  passwordToken,
  postJson,
  postToken,
  startAuthServer,
  type AuthServer,
} from './auth-server.ts';

setBcryptCost(4);
const defaults = { ...loginLimits };

const ADMIN = { username: 'root', password: 'root-password-1' };

describe('POST /token', () => {
  let server: AuthServer;
  let adminToken: string;
  beforeAll(async () => {
    server = await startAuthServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
    adminToken = await passwordToken(server.url, ADMIN.username, ADMIN.password);
  });
  afterAll(async () => server.close());
  afterEach(() => Object.assign(loginLimits, defaults));

  async function siteCredentials(siteId: string): Promise<{ client_id: string; client_secret: string }> {
    expect((await postJson(`${server.url}/sites`, { id: siteId }, adminToken)).status).toBe(201);
    const generated = await postJson(`${server.url}/sites/${siteId}:generateCredentials`, {}, adminToken);
    expect(generated.status).toBe(200);
    return generated.body as { client_id: string; client_secret: string };
  }

  it('issues a bearer JWT for a username and password, with the lifetime as days/hours/minutes', async () => {
    const { status, body, headers } = await postToken(server.url, { grant_type: 'password', ...ADMIN });
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires', 'token_type']);
    expect(body).toMatchObject({ token_type: 'bearer', expires: { days: 1, hours: 0, minutes: 0 } });
    const claims = decodeJwt(body.access_token as string);
    expect(claims).toMatchObject({ sub: 'root', iss: server.url, aud: `${server.url}/api` });
    expect((claims.exp as number) - (claims.iat as number)).toBe(86400);
    const me = await getJson(`${server.url}/users/me`, body.access_token as string);
    expect(me.body).toEqual({ username: 'root', site_admin: ['nmdc-runtime-useradmin'], disabled: false });
  });

  it('answers 401 "Incorrect username or password" with WWW-Authenticate for a wrong password, an unknown user or a missing password', async () => {
    for (const form of [
      { grant_type: 'password', username: 'root', password: 'wrong' },
      { grant_type: 'password', username: 'nobody', password: 'whatever' },
      { grant_type: 'password', username: 'root' },
    ] as Array<Record<string, string>>) {
      const { status, body, headers } = await postToken(server.url, form);
      expect(status).toBe(401);
      expect(body).toEqual({ detail: 'Incorrect username or password' });
      expect(headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('refuses a disabled user with the same 401 as a wrong password', async () => {
    expect(
      (
        await postJson(
          `${server.url}/users`,
          { username: 'gone', password: 'gone fishing by the lake' },
          adminToken,
        )
      ).status,
    ).toBe(201);
    const token = await passwordToken(server.url, 'gone', 'gone fishing by the lake');
    await server.store.upsertMany('users', [
      { ...(await server.store.getById('users', 'gone'))!, disabled: true },
    ]);
    const { status, body } = await postToken(server.url, {
      grant_type: 'password',
      username: 'gone',
      password: 'gone fishing by the lake',
    });
    expect(status).toBe(401);
    expect(body).toEqual({ detail: 'Incorrect username or password' });
    const me = await getJson(`${server.url}/users/me`, token);
    expect(me.status).toBe(401);
    expect(me.body).toEqual({ detail: 'Access token has been invalidated. Please log in again.' });
  });

  it('logs a site client in with client_id and client_secret as form fields', async () => {
    const credentials = await siteCredentials('site-form');
    const { status, body } = await postToken(server.url, {
      grant_type: 'client_credentials',
      ...credentials,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ token_type: 'bearer', expires: { days: 1, hours: 0, minutes: 0 } });
    const whoami = await getJson(`${server.url}/private/whoami`, body.access_token as string);
    expect(whoami.body).toEqual({
      kind: 'site_client',
      subject: credentials.client_id,
      siteId: 'site-form',
      isRuntimeAdmin: false,
    });
  });

  it('logs a site client in with the credentials in an HTTP Basic Authorization header', async () => {
    const credentials = await siteCredentials('site-basic');
    const basic = Buffer.from(`${credentials.client_id}:${credentials.client_secret}`).toString('base64');
    const { status, body } = await postToken(
      server.url,
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${basic}` },
    );
    expect(status).toBe(200);
    expect(decodeJwt(body.access_token as string).sub).toBe(credentials.client_id);
  });

  it('answers 401 "Incorrect client_id or client_secret" for a wrong secret or an unknown client', async () => {
    const credentials = await siteCredentials('site-wrong');
    for (const form of [
      { grant_type: 'client_credentials', client_id: credentials.client_id, client_secret: 'nope' },
      {
        grant_type: 'client_credentials',
        client_id: 'sys0unknown',
        client_secret: credentials.client_secret,
      },
      { grant_type: 'client_credentials' },
    ] as Array<Record<string, string>>) {
      const { status, body, headers } = await postToken(server.url, form);
      expect(status).toBe(401);
      expect(body).toEqual({ detail: 'Incorrect client_id or client_secret' });
      expect(headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('keeps a site client working after the administrators of its site change', async () => {
    const credentials = await siteCredentials('site-handover');
    const before = await postToken(server.url, { grant_type: 'client_credentials', ...credentials });
    // The administrator leaves the site and someone else takes it over.
    const root = (await server.store.getById('users', 'root'))!;
    await server.store.upsertMany('users', [
      { ...root, site_admin: (root.site_admin as string[]).filter((s) => s !== 'site-handover') },
    ]);
    await postJson(
      `${server.url}/users`,
      { username: 'successor', password: 'successor takes the helm', site_admin: ['site-handover'] },
      adminToken,
    );
    const oldToken = await getJson(`${server.url}/private/whoami`, before.body.access_token as string);
    expect(oldToken.status).toBe(200);
    const after = await postToken(server.url, { grant_type: 'client_credentials', ...credentials });
    expect(after.status).toBe(200);
    const whoami = await getJson(`${server.url}/private/whoami`, after.body.access_token as string);
    expect(whoami.body).toMatchObject({ kind: 'site_client', siteId: 'site-handover' });
  });

  it('refuses an id_token exchange when no external issuer is configured', async () => {
    const fake = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    const { status, body } = await postToken(server.url, {
      grant_type: 'client_credentials',
      client_id: fake,
      client_secret: '',
    });
    expect(status).toBe(401);
    expect(body).toEqual({ detail: 'Incorrect client_id or client_secret' });
  });

  it('answers 400 for a grant type other than password and client_credentials', async () => {
    const { status, body } = await postToken(server.url, { grant_type: 'authorization_code', code: 'x' });
    expect(status).toBe(400);
    expect(body.detail).toMatch(/grant_type/);
  });

  it('answers 429 with Retry-After after too many failed attempts for one username, and counts no other account', async () => {
    loginLimits.failuresPerAccountAndAddress = 3;
    for (let i = 0; i < 3; i++) {
      expect(
        (await postToken(server.url, { grant_type: 'password', username: 'target', password: `guess-${i}` }))
          .status,
      ).toBe(401);
    }
    const blocked = await postToken(server.url, {
      grant_type: 'password',
      username: 'target',
      password: 'guess-3',
    });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({
      detail: 'Too many failed login attempts for this account from this address. Try again later.',
    });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another account from the same address is not affected.
    expect((await postToken(server.url, { grant_type: 'password', ...ADMIN })).status).toBe(200);
  });

  it('answers 429 with Retry-After after too many attempts from one address', async () => {
    loginLimits.attemptsPerAddress = 1_000_000;
    const fresh = await startAuthServer({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    try {
      loginLimits.attemptsPerAddress = 4;
      for (let i = 0; i < 4; i++) {
        expect(
          (await postToken(fresh.url, { grant_type: 'password', username: `user-${i}`, password: 'x' }))
            .status,
        ).toBe(401);
      }
      const blocked = await postToken(fresh.url, { grant_type: 'password', ...ADMIN });
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({ detail: 'Too many login attempts from this address. Try again later.' });
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await fresh.close();
    }
  });
});
