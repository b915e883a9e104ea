/**
 * Faults of the process and its dependencies: SIGKILL during account changes, graceful SIGTERM,
 * unreachable MONGO_URL / ELASTICSEARCH_URL at start-up.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, freePort, kill, spawnServer, startServer, type ServerProcess } from './process-faults.ts';

const ADMIN = { ADMIN_USERNAME: 'fault-admin', ADMIN_PASSWORD: 'fault admin password' };
const dirs: string[] = [];
const dataDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-fault-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

async function token(
  url: string,
  username: string,
  password: string,
): Promise<{ status: number; token?: string }> {
  const res = await fetch(`${url}/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', username, password }),
  });
  const body = (await res.json()) as { access_token?: string };
  return { status: res.status, token: body.access_token };
}

describe('process faults', () => {
  /** The server the SIGKILL test restarted, left running for the SIGTERM test (one start fewer). */
  let restarted: ServerProcess | undefined;
  afterAll(async () => {
    if (restarted && restarted.child.exitCode === null) await kill(restarted);
  });

  // Two server start-ups, a burst of writes and check-index: 31 s on a slow 2-core machine.
  it('keeps every acknowledged account change after a SIGKILL mid-burst; integrity and index stay exact', async () => {
    const dir = dataDir();
    const first = await startServer({ DATA_DIR: dir, ...ADMIN, DEMO_DATA: 'true' });
    const admin = (await token(first.url, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD)).token!;
    const auth = { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' };
    const acknowledged: Array<{ kind: 'user' | 'site'; id: string }> = [];
    let stop = false;
    const burst = async (worker: number) => {
      for (let i = 0; !stop; i++) {
        const id = `w${worker}-n${i}`;
        try {
          const user = await fetch(`${first.url}/users`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ username: `user-${id}`, password: `sediment cores of ${id}` }),
          });
          if (user.status === 201) acknowledged.push({ kind: 'user', id: `user-${id}` });
          const site = await fetch(`${first.url}/sites`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ id: `site-${id}` }),
          });
          if (site.status === 201) acknowledged.push({ kind: 'site', id: `site-${id}` });
          const creds = await fetch(`${first.url}/sites/site-${id}:generateCredentials`, {
            method: 'POST',
            headers: auth,
          });
          if (creds.status === 200) acknowledged.push({ kind: 'site', id: `site-${id}` });
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const workers = [0, 1, 2, 3].map(burst);
    while (acknowledged.length < 24) await new Promise((r) => setTimeout(r, 20));
    await kill(first, 'SIGKILL');
    stop = true;
    await Promise.all(workers);

    const file = path.join(dir, 'nmdc.sqlite');
    const db = new Database(file, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();

    const second = await startServer({ DATA_DIR: dir, ...ADMIN });
    restarted = second;
    const adminAgain = (await token(second.url, ADMIN.ADMIN_USERNAME, ADMIN.ADMIN_PASSWORD)).token!;
    for (const { kind, id } of acknowledged) {
      if (kind === 'user') {
        const login = await token(second.url, id, `sediment cores of ${id.slice('user-'.length)}`);
        expect(login.status, `user ${id}`).toBe(200);
      } else {
        const site = await fetch(`${second.url}/sites/${id}`, {
          headers: { Authorization: `Bearer ${adminAgain}` },
        });
        expect(site.status, `site ${id}`).toBe(200);
      }
    }
    const check = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/check-index.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dir },
      encoding: 'utf8',
    });
    expect(check.stdout).toContain('index is exact');
    expect(check.status).toBe(0);
    // Two server starts (about 4 s each alone, twice that in a full suite on 2 cores), the burst at
    // production bcrypt cost and a check-index process: 12 s alone, 14-21 s in full suites.
  }, 120_000);

  it('finishes an in-flight request on SIGTERM and exits 0', async () => {
    const server = restarted ?? (await startServer({ DATA_DIR: dataDir() }));
    restarted = undefined;
    const { port } = new URL(server.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let response = '';
    socket.on('data', (d) => (response += String(d)));
    const body = 'grant_type=password&username=nobody&password=wrong-password';
    // Headers and half the body: the request is in flight when the signal arrives.
    socket.write(
      `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    expect(server.child.exitCode).toBeNull();
    const sent = performance.now();
    socket.write(body.slice(20));
    const code = await server.exited;
    // It exits once the answer is sent: the keep-alive connection is closed then, not by the
    // forced close 10 s after the signal.
    expect(performance.now() - sent).toBeLessThan(9000);
    expect(response).toMatch(/^HTTP\/1\.1 401/);
    expect(response).toContain('Incorrect username or password');
    expect(code).toBe(0);
    socket.destroy();
  }, 30_000);

  it.each([
    ['MONGO_URL', 'mongodb://127.0.0.1:PORT/?serverSelectionTimeoutMS=1000'],
    ['ELASTICSEARCH_URL', 'http://127.0.0.1:PORT'],
  ])(
    'fails start-up with a message naming %s when it points at a closed port',
    async (name, template) => {
      const closed = await freePort();
      const server = spawnServer(
        { DATA_DIR: dataDir(), [name]: template.replace('PORT', String(closed)) },
        await freePort(),
      );
      const code = await server.exited;
      expect(code).toBe(1);
      expect(server.stderr()).toContain(`Start-up failed: cannot reach`);
      expect(server.stderr()).toContain(name);
    },
    // The server's start-up before it reaches the store: 11 s on a slow 2-core machine.
    60_000,
  );
});
