/**
 * The issuer of every token is PUBLIC_URL (default http://localhost:8080), not the port: a token
 * stays good when only PORT changes, and one issued under another PUBLIC_URL is refused saying so.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { DEFAULT_PUBLIC_URL, loadConfig, publicUrlWarning } from '../../src/config.ts';
import { createTestApp, passwordToken } from '../support/server.ts';

setBcryptCost(4);
const ADMIN = { ADMIN_USERNAME: 'issuer-admin', ADMIN_PASSWORD: 'cobalt orchard lantern drift' };
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-issuer-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** Logs in on an app over `dataDir` with `env`, or calls /users/me with `token`; the app is closed after. */
async function onApp<T>(
  env: Record<string, string>,
  run: (app: Awaited<ReturnType<typeof createTestApp>>) => Promise<T>,
) {
  const app = await createTestApp({ ...ADMIN, DATA_DIR: dataDir, ...env });
  try {
    return await run(app);
  } finally {
    await app.close();
  }
}

describe('PUBLIC_URL', () => {
  it('defaults to http://localhost:8080 whatever PORT is, and start-up says when that is not where it listens', () => {
    expect(DEFAULT_PUBLIC_URL).toBe('http://localhost:8080');
    const moved = loadConfig({ PORT: '9000' });
    expect(moved).toMatchObject({ port: 9000, publicUrl: 'http://localhost:8080', publicUrlIsDefault: true });
    expect(publicUrlWarning(moved)).toBe(
      'PUBLIC_URL is not set, so the service names itself http://localhost:8080 (the token issuer, and the base of ' +
        'the discovery document and sign-in redirects) while it listens on port 9000: set PUBLIC_URL to the ' +
        'address clients use, e.g. PUBLIC_URL=http://localhost:9000. Tokens issued under one PUBLIC_URL are ' +
        'refused under another.',
    );
    expect(publicUrlWarning(loadConfig({}))).toBeUndefined();
    const set = loadConfig({ PORT: '9000', PUBLIC_URL: 'https://nmdc.example.org/' });
    expect(set).toMatchObject({ publicUrl: 'https://nmdc.example.org', publicUrlIsDefault: false });
    expect(publicUrlWarning(set)).toBeUndefined();
  });

  it('is the issuer: a token stays good when only PORT changes', async () => {
    const token = await onApp({ PORT: '8080' }, (t) =>
      passwordToken(t.app, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD),
    );
    const me = await onApp({ PORT: '9191' }, async (t) => {
      const discovery = await request(t.app).get('/.well-known/openid-configuration').expect(200);
      expect(discovery.body.issuer).toBe('http://localhost:8080');
      return request(t.app).get('/users/me').set('Authorization', `Bearer ${token}`);
    });
    expect(me.status, me.text).toBe(200);
    expect(me.body.username).toBe(ADMIN.ADMIN_USERNAME);
  });

  it('refuses a token issued under another PUBLIC_URL, saying which and what to do', async () => {
    const token = await onApp({ PUBLIC_URL: 'http://127.0.0.1:7001' }, (t) =>
      passwordToken(t.app, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD),
    );
    const me = await onApp({ PUBLIC_URL: 'https://nmdc.example.org' }, (t) =>
      request(t.app).get('/users/me').set('Authorization', `Bearer ${token}`),
    );
    expect(me.status).toBe(401);
    expect(me.body).toEqual({
      detail:
        'Access token was issued by http://127.0.0.1:7001, but this service now names itself https://nmdc.example.org (PUBLIC_URL). ' +
        'Please log in again, or run the service with the PUBLIC_URL the token was issued under.',
    });
  });
});
