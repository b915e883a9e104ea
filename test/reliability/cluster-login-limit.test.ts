/**
 * WORKERS=2: the login limit per account and address (10 unsuccessful attempts per window) holds
 * across the server processes. Each attempt opens its own connection, so the primary spreads them
 * over both workers; counted per process, eleven attempts would leave each worker below its limit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import { kill, processTree, startServer, type ServerProcess } from './process-faults.ts';

const ADMIN = { ADMIN_USERNAME: 'cluster-admin', ADMIN_PASSWORD: 'cluster admin password' };

/** A form POST /token on a fresh connection. */
function login(url: string, username: string, password: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/token`,
      { agent: false, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(new URLSearchParams({ grant_type: 'password', username, password }).toString());
  });
}

describe('login limits with WORKERS=2', () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-login-'));
    server = await startServer({ DATA_DIR: dir, WORKERS: '2', ...ADMIN });
    const workers = () => processTree(server.child.pid!).slice(1);
    for (let i = 0; i < 300 && workers().length !== 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect(workers()).toHaveLength(2);
  }, 180_000);
  afterAll(async () => {
    if (server?.child.exitCode === null) await kill(server, 'SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the eleventh unsuccessful attempt for an account, whichever process answers', async () => {
    const limit = loginLimits.failuresPerAccountAndAddress;
    for (let i = 0; i < limit; i++) {
      const answer = await login(server.url, 'cluster-target', `wrong guess ${i}`);
      expect(answer).toEqual({ status: 401, body: { detail: 'Incorrect username or password' } });
    }
    for (let i = 0; i < 4; i++) {
      const answer = await login(server.url, 'cluster-target', `wrong guess ${limit + i}`);
      expect(answer).toEqual({
        status: 429,
        body: {
          detail: 'Too many failed login attempts for this account from this address. Try again later.',
        },
      });
    }
    // Other accounts log in as before.
    expect((await login(server.url, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD)).status).toBe(200);
  });
});
