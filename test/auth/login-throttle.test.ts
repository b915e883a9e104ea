/**
 * Login limits that strangers cannot turn against an account's owner: failed attempts count per
 * account and client address together, so a guesser at one address is held back while the owner,
 * from another, still logs in; guessing spread over many addresses is held back by a ceiling per
 * account that never holds back an address the account logged in from. Client addresses come from
 * `X-Forwarded-For`, sent by a trusted proxy on the loopback interface (the default TRUST_PROXY).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import {
  TOO_MANY_FOR_ACCOUNT_AND_ADDRESS,
  TOO_MANY_FROM_NEW_ADDRESSES,
  addressKey,
  loginLimits,
} from '../../src/auth/login-rate-limit.ts';
import { postJson, postToken, startAuthServer, type AuthServer } from './auth-server.ts';

setBcryptCost(4);
const defaults = { ...loginLimits };

const ADMIN = { username: 'throttle-root', password: 'Nq3-harrier-lichen-75-delta' };
const from = (address: string) => ({ 'x-forwarded-for': address });

let server: AuthServer;
beforeAll(async () => {
  server = await startAuthServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
});
afterAll(async () => server?.close());
afterEach(() => Object.assign(loginLimits, defaults));

const adminLogin = (address: string) =>
  postToken(server.url, { grant_type: 'password', ...ADMIN }, from(address));
const adminGuess = (address: string, i: number) =>
  postToken(
    server.url,
    { grant_type: 'password', username: ADMIN.username, password: `guess number ${i}` },
    from(address),
  );

describe('failed attempts per account and address', () => {
  it("lets the administrator log in from elsewhere after a stranger's wrong passwords, and holds the stranger back", async () => {
    for (let i = 0; i < loginLimits.failuresPerAccountAndAddress; i++) {
      const guess = await adminGuess('198.51.100.10', i);
      expect(guess.status).toBe(401);
      expect(guess.body).toEqual({ detail: 'Incorrect username or password' });
    }
    // The stranger's address is held back, even with the right password...
    const stranger = await adminLogin('198.51.100.10');
    expect(stranger.status).toBe(429);
    expect(stranger.body).toEqual({ detail: TOO_MANY_FOR_ACCOUNT_AND_ADDRESS });
    expect(Number(stranger.headers.get('retry-after'))).toBeGreaterThan(0);
    // ...while the owner, at another address, logs in.
    const owner = await adminLogin('192.0.2.20');
    expect(owner.status).toBe(200);
    expect(owner.body.token_type).toBe('bearer');
  });

  it("does the same for a site client's secret", async () => {
    const admin = (await adminLogin('192.0.2.20')).body.access_token as string;
    expect((await postJson(`${server.url}/sites`, { id: 'throttle-lab' }, admin)).status).toBe(201);
    const credentials = (await postJson(`${server.url}/sites/throttle-lab:generateCredentials`, {}, admin))
      .body as { client_id: string; client_secret: string };
    const login = (secret: string, address: string) =>
      postToken(
        server.url,
        { grant_type: 'client_credentials', client_id: credentials.client_id, client_secret: secret },
        from(address),
      );
    for (let i = 0; i < loginLimits.failuresPerAccountAndAddress; i++) {
      const guess = await login(`guess ${i}`, '198.51.100.11');
      expect(guess.body).toEqual({ detail: 'Incorrect client_id or client_secret' });
    }
    const stranger = await login(credentials.client_secret, '198.51.100.11');
    expect(stranger.status).toBe(429);
    expect(stranger.body).toEqual({ detail: TOO_MANY_FOR_ACCOUNT_AND_ADDRESS });
    const site = await login(credentials.client_secret, '192.0.2.21');
    expect(site.status).toBe(200);
  });

  it('forgets the failures at an address once the right password is given there', async () => {
    loginLimits.failuresPerAccountAndAddress = 3;
    for (let i = 0; i < 2; i++) expect((await adminGuess('192.0.2.30', i)).status).toBe(401);
    expect((await adminLogin('192.0.2.30')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await adminGuess('192.0.2.30', i)).status).toBe(401);
    expect((await adminLogin('192.0.2.30')).status).toBe(429);
  });

  it('counts an IPv6 client by its /64 network, so rotating addresses inside it does not help', async () => {
    loginLimits.failuresPerAccountAndAddress = 3;
    for (let i = 0; i < 3; i++) {
      expect((await adminGuess(`2001:db8:aa:bb::${i + 1}`, i)).status).toBe(401);
    }
    const sameNetwork = await adminLogin('2001:db8:aa:bb:ffff:1:2:3');
    expect(sameNetwork.status).toBe(429);
    expect(sameNetwork.body).toEqual({ detail: TOO_MANY_FOR_ACCOUNT_AND_ADDRESS });
    expect((await adminLogin('2001:db8:aa:cc::1')).status).toBe(200);
  });
});

describe('attempts on one account from many addresses', () => {
  it('are held back past the ceiling, except at addresses the account logged in from', async () => {
    const admin = (await adminLogin('192.0.2.20')).body.access_token as string;
    const user = { username: 'throttle-spread', password: 'Kc8-orchard-pewter-13-snipe' };
    expect((await postJson(`${server.url}/users`, user, admin)).status).toBe(201);
    const attempt = (password: string, address: string) =>
      postToken(server.url, { grant_type: 'password', username: user.username, password }, from(address));
    loginLimits.attemptsPerAccountFromNewAddresses = 5;
    // The owner logged in from this address before the guessing started (one new-address attempt).
    expect((await attempt(user.password, '192.0.2.40')).status).toBe(200);
    for (let i = 0; i < 4; i++)
      expect((await attempt(`guess ${i}`, `203.0.113.${100 + i}`)).status).toBe(401);
    const spread = await attempt('guess 9', '203.0.113.120');
    expect(spread.status).toBe(429);
    expect(spread.body).toEqual({ detail: TOO_MANY_FROM_NEW_ADDRESSES });
    expect((await attempt(user.password, '203.0.113.121')).status).toBe(429);
    const owner = await attempt(user.password, '192.0.2.40');
    expect(owner.status).toBe(200);
    expect(owner.body.token_type).toBe('bearer');
  });
});

describe('TRUST_PROXY=false', () => {
  it('counts by the connection, so a client naming other addresses in X-Forwarded-For gains nothing', async () => {
    const direct = await startAuthServer({
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      TRUST_PROXY: 'false',
    });
    try {
      loginLimits.failuresPerAccountAndAddress = 3;
      for (let i = 0; i < 3; i++) {
        const guess = await postToken(
          direct.url,
          { grant_type: 'password', username: ADMIN.username, password: `guess ${i}` },
          from(`198.51.100.${50 + i}`),
        );
        expect(guess.status).toBe(401);
      }
      const spoofed = await postToken(direct.url, { grant_type: 'password', ...ADMIN }, from('192.0.2.99'));
      expect(spoofed.status).toBe(429);
      expect(spoofed.body).toEqual({ detail: TOO_MANY_FOR_ACCOUNT_AND_ADDRESS });
    } finally {
      await direct.close();
    }
  });
});

describe('addressKey', () => {
  it('keeps IPv4 addresses, unwraps IPv4-mapped IPv6 ones and takes the /64 of IPv6 ones', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:aa:bb:1:2:3:4')).toBe('2001:db8:aa:bb::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('::ffff:1.2.3.4:5')).toMatch(/^other:/);
    expect(addressKey('not an address')).toMatch(/^other:[\w-]{43}$/);
  });
});
