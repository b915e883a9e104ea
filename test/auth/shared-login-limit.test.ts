/**
 * Login rate limits are counted in the state store every server process shares: two servers on
 * one DATA_DIR (as WORKERS processes are) enforce one limit between them, not one each.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import { postToken, startAuthServer, type AuthServer } from './auth-server.ts';

setBcryptCost(4);

const ADMIN = { username: 'root', password: 'root-password-1' };
const defaults = { ...loginLimits };

describe('login limits shared by two servers on one store', () => {
  let first: AuthServer;
  let second: AuthServer;

  beforeAll(async () => {
    first = await startAuthServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
    second = await startAuthServer(
      { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password },
      { dataDir: first.dataDir },
    );
  });
  afterAll(async () => {
    await second?.close({ removeData: false });
    await first?.close();
  });
  afterEach(() => Object.assign(loginLimits, defaults));

  it("counts one account's failed attempts on both servers against one limit", async () => {
    loginLimits.failuresPerAccountAndAddress = 4;
    const guess = (server: AuthServer, i: number) =>
      postToken(server.url, {
        grant_type: 'password',
        username: 'shared-target',
        password: `guess number ${i}`,
      });
    // Two failures on each server: four in all, the limit.
    for (const [server, i] of [
      [first, 0],
      [second, 1],
      [first, 2],
      [second, 3],
    ] as const) {
      const answer = await guess(server, i);
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ detail: 'Incorrect username or password' });
    }
    // Counted per process, each server would have seen only two; shared, both now refuse.
    for (const server of [first, second]) {
      const blocked = await guess(server, 9);
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({
        detail: 'Too many failed login attempts for this account from this address. Try again later.',
      });
      const retryAfter = Number(blocked.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(loginLimits.windowSeconds);
    }
  });

  it('clears the count on a successful login, on whichever server it happens', async () => {
    loginLimits.failuresPerAccountAndAddress = 3;
    for (const server of [first, second]) {
      expect(
        (await postToken(server.url, { grant_type: 'password', username: 'root', password: 'not it' }))
          .status,
      ).toBe(401);
    }
    expect((await postToken(second.url, { grant_type: 'password', ...ADMIN })).status).toBe(200);
    // The two failures were forgotten: three more are allowed before the limit.
    for (const server of [first, second, first]) {
      expect(
        (await postToken(server.url, { grant_type: 'password', username: 'root', password: 'not it' }))
          .status,
      ).toBe(401);
    }
    const blocked = await postToken(second.url, { grant_type: 'password', ...ADMIN });
    expect(blocked.status).toBe(429);
  });

  it("counts one address's attempts on both servers against one limit", async () => {
    loginLimits.attemptsPerAddress = 4;
    // Requests come through a proxy on the loopback interface, which names the client address.
    const from = { 'x-forwarded-for': '203.0.113.7' };
    const attempt = (server: AuthServer, i: number) =>
      postToken(server.url, { grant_type: 'password', username: `visitor-${i}`, password: 'x' }, from);
    for (const [server, i] of [
      [first, 0],
      [second, 1],
      [first, 2],
      [second, 3],
    ] as const) {
      expect((await attempt(server, i)).status).toBe(401);
    }
    for (const server of [first, second]) {
      const refused = await postToken(server.url, { grant_type: 'password', ...ADMIN }, from);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ detail: 'Too many login attempts from this address. Try again later.' });
    }
    // Another address is not affected.
    const elsewhere = await postToken(
      first.url,
      { grant_type: 'password', ...ADMIN },
      { 'x-forwarded-for': '203.0.113.8' },
    );
    expect(elsewhere.status).toBe(200);
  });
});
