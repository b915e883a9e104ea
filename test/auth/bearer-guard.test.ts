import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { getJson, passwordToken, startAuthServer, type AuthServer } from './auth-server.ts';
import { issuedElsewhere } from '../../src/auth/access-tokens.ts';

setBcryptCost(4);

const INVALID = { detail: 'Access token is invalid or missing. Please log in again.' };
const EXPIRED = { detail: 'Access token has expired. Please log in again.' };
const INVALIDATED = { detail: 'Access token has been invalidated. Please log in again.' };

async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid };
}

describe('bearer guard on private routes', () => {
  let server: AuthServer;
  let serviceKey: JWK;
  let token: string;

  beforeAll(async () => {
    serviceKey = await signingKey('service-key-1');
    server = await startAuthServer({
      ADMIN_USERNAME: 'root',
      ADMIN_PASSWORD: 'root-password-1',
      SIGNING_KEYS: JSON.stringify({ keys: [serviceKey] }),
      TOKEN_TTL_SECONDS: '60',
    });
    token = await passwordToken(server.url, 'root', 'root-password-1');
  });
  afterAll(async () => server.close());
  afterEach(() => vi.useRealTimers());

  /** A token with the given claims signed by `key` (the service's own by default). */
  async function forge(claims: Record<string, unknown>, key: JWK = serviceKey): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ jti: `forged-${Math.random()}`, nmdc_principal: 'user', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt' })
      .setSubject((claims.sub as string | undefined) ?? 'root')
      .setIssuer((claims.iss as string) ?? server.url)
      .setAudience((claims.aud as string) ?? `${server.url}/api`)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(await importJWK(key, 'RS256'));
  }

  it('accepts a token the service issued and exposes the principal', async () => {
    const { status, body } = await getJson(`${server.url}/private/whoami`, token);
    expect(status).toBe(200);
    expect(body).toEqual({ kind: 'user', subject: 'root', isRuntimeAdmin: true });
  });

  it('signs with the configured key', async () => {
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string };
    expect(header.kid).toBe('service-key-1');
    const jwks = await getJson(`${server.url}/oidc/jwks`);
    expect((jwks.body.keys as JWK[]).map((k) => k.kid)).toEqual(['service-key-1']);
    expect((jwks.body.keys as JWK[])[0]).not.toHaveProperty('d');
  });

  it('answers 401 "invalid or missing" with WWW-Authenticate when there is no token or not a Bearer one', async () => {
    for (const headers of [{}, { authorization: 'Basic cm9vdDpyb290' }, { authorization: 'Bearer' }] as Array<
      Record<string, string>
    >) {
      const response = await fetch(`${server.url}/private/whoami`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toEqual(INVALID);
    }
  });

  it('rejects garbage, alg "none", a foreign signature, a wrong issuer and a wrong audience', async () => {
    const [header, payload] = token.split('.');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const foreign = await forge({}, await signingKey('service-key-1'));
    const wrongIssuer = await forge({ iss: 'http://127.0.0.1:1' });
    const wrongAudience = await forge({ aud: 'urn:some-other-api' });
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'someone' })).toString('base64url')}.${token.split('.')[2]}`;
    for (const bad of ['not-a-jwt', unsigned, foreign, wrongAudience, tampered]) {
      const { status, body } = await getJson(`${server.url}/private/whoami`, bad);
      expect(status).toBe(401);
      expect(body).toEqual(INVALID);
    }
    // Signed with the service's key for another issuer: issued while the service had another PUBLIC_URL.
    const elsewhere = await getJson(`${server.url}/private/whoami`, wrongIssuer);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body).toEqual({ detail: issuedElsewhere('http://127.0.0.1:1', server.url) });
    // The same claims with the service's key and the right issuer/audience pass: the checks above are what failed.
    expect((await getJson(`${server.url}/private/whoami`, await forge({}))).status).toBe(200);
  });

  it('answers 401 "expired" once the configured lifetime has passed', async () => {
    const shortLived = await passwordToken(server.url, 'root', 'root-password-1');
    expect((await getJson(`${server.url}/private/whoami`, shortLived)).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    const { status, body } = await getJson(`${server.url}/private/whoami`, shortLived);
    expect(status).toBe(401);
    expect(body).toEqual(EXPIRED);
  });

  it('reports a 60-second lifetime as 1 minute', async () => {
    const response = await fetch(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&username=root&password=root-password-1',
    });
    expect(((await response.json()) as { expires: unknown }).expires).toEqual({
      days: 0,
      hours: 0,
      minutes: 1,
    });
  });

  it('answers 401 "invalidated" after the token is revoked at the provider revocation endpoint', async () => {
    const revocable = await passwordToken(server.url, 'root', 'root-password-1');
    const revoked = await fetch(`${server.url}/oidc/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: revocable,
        token_type_hint: 'access_token',
        client_id: 'swagger-ui',
      }).toString(),
    });
    expect(revoked.status).toBe(200);
    const { status, body } = await getJson(`${server.url}/private/whoami`, revocable);
    expect(status).toBe(401);
    expect(body).toEqual(INVALIDATED);
    // Other tokens of the same user keep working.
    expect((await getJson(`${server.url}/private/whoami`, token)).status).toBe(200);
  });

  it('answers 401 "invalidated" after POST /logout with the token', async () => {
    const session = await passwordToken(server.url, 'root', 'root-password-1');
    const logout = await fetch(`${server.url}/logout`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session}` },
    });
    expect(logout.status).toBe(204);
    expect(await getJson(`${server.url}/users/me`, session)).toMatchObject({
      status: 401,
      body: INVALIDATED,
    });
  });

  it('answers 401 "invalidated" for a token of a user who no longer exists', async () => {
    const ghost = await forge({ sub: 'deleted-user' });
    expect(await getJson(`${server.url}/private/whoami`, ghost)).toMatchObject({
      status: 401,
      body: INVALIDATED,
    });
  });
});

describe('signing keys across restarts', () => {
  it('keeps accepting a token after a restart on the same data folder', async () => {
    const first = await startAuthServer({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    const issued = await passwordToken(first.url, 'root', 'root-password-1');
    const jwksBefore = (await getJson(`${first.url}/oidc/jwks`)).body;
    await first.close({ removeData: false });

    const second = await startAuthServer(
      { ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' },
      { dataDir: first.dataDir, port: Number(new URL(first.url).port) },
    );
    try {
      expect((await getJson(`${second.url}/oidc/jwks`)).body).toEqual(jwksBefore);
      const algs = (jwksBefore.keys as JWK[]).map((k) => k.alg).sort();
      expect(algs).toEqual(['ES256', 'RS256']);
      const me = await getJson(`${second.url}/users/me`, issued);
      expect(me.status).toBe(200);
      expect(me.body.username).toBe('root');
    } finally {
      await second.close();
    }
  });
});
