/**
 * WORKERS > 1: several server processes share the port and the store. Continuations and tokens
 * made by one process work on the others, a dead worker is replaced, SIGTERM stops them all.
 * Every request below opens its own connection, so the primary spreads them over the workers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DATA_SET } from '../../src/startup.ts';
import {
  kill,
  processTree,
  startServer,
  type ServerProcess,
  requestOnFreshConnection,
} from './process-faults.ts';

const ADMIN = { ADMIN_USERNAME: 'cluster-admin', ADMIN_PASSWORD: 'cluster admin password' };

const request = requestOnFreshConnection;

const workersOf = (server: ServerProcess) => processTree(server.child.pid!).slice(1);

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
  expect(check()).toBe(true);
}

describe('several server processes (WORKERS=2)', () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-'));
    server = await startServer({ DATA_DIR: dir, DEMO_DATA: 'true', WORKERS: '2', ...ADMIN });
    await waitFor(() => workersOf(server).length === 2);
  }, 180_000);
  afterAll(async () => {
    if (server.child.exitCode === null) await kill(server);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('loads the demo data once and pages through it with cursors across processes', async () => {
    const ids: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 20 && (page === 0 || token); page++) {
      const res = await request(
        `${server.url}/nmdcschema/biosample_set?max_page_size=15&projection=id${token ? `&page_token=${token}` : ''}`,
      );
      expect(res.status).toBe(200);
      ids.push(...res.body.resources.map((r: { id: string }) => r.id));
      token = res.body.next_page_token ?? undefined;
    }
    expect(ids).toHaveLength(DEMO_DATA_SET.biosamples);
    expect(new Set(ids).size).toBe(DEMO_DATA_SET.biosamples);
    expect(ids).toEqual([...ids].sort());
  });

  it('accepts a token issued by one process on every process', async () => {
    const issued = await request(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        username: ADMIN.ADMIN_USERNAME,
        password: ADMIN.ADMIN_PASSWORD,
      }).toString(),
    });
    expect(issued.status).toBe(200);
    for (let i = 0; i < 6; i++) {
      const me = await request(`${server.url}/users/me`, {
        headers: { authorization: `Bearer ${issued.body.access_token}` },
      });
      expect(me.status).toBe(200);
      expect(me.body.username).toBe(ADMIN.ADMIN_USERNAME);
    }
  });

  it('replaces a worker that dies and keeps serving', async () => {
    const [victim] = workersOf(server);
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => {
      const now = workersOf(server);
      return now.length === 2 && !now.includes(victim!);
    });
    for (let i = 0; i < 4; i++) {
      const res = await request(`${server.url}/studies?per_page=2`);
      expect(res.status).toBe(200);
      expect(res.body.meta.count).toBe(DEMO_DATA_SET.studies);
    }
  });

  it('stops every process on SIGTERM and exits 0', async () => {
    const workers = workersOf(server);
    expect(await kill(server, 'SIGTERM')).toBe(0);
    for (const pid of workers) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  });
});
