/**
 * A server killed (SIGKILL) between a trigger firing and its job neither loses nor doubles a job:
 * an object gains a type that thousands of catalog triggers name (an administrator's
 * WORKFLOW_CATALOG file: one workflow per trigger), the server is killed once it logs the first
 * `trigger fired`, the store file then holds firings still pending, and after a restart on the
 * same data folder every firing has become exactly one job (one per workflow and object) and none
 * is pending. The server runs as a child process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLoggingServer, type LoggingServer } from './process-faults.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

const TRIGGERS = 1000;
const OBJECT_TYPE = 'killtest-reads';
const ADMIN = { username: 'root', password: 'trigger-root-password-3391' };
const FIRED = 'trigger fired';

type Child = LoggingServer;

const startServer = (dataDir: string, catalog: string) =>
  startLoggingServer({
    DATA_DIR: dataDir,
    WORKFLOW_CATALOG: catalog,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });

async function json(url: string, init?: RequestInit): Promise<any> {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields),
});
const withToken = (token: string, method: string, body: unknown): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  body: JSON.stringify(body),
});

/** Reads the store file directly (the server stopped, or between its transactions). */
async function readStore<T>(dataDir: string, read: (store: SqliteDocumentStore) => Promise<T>): Promise<T> {
  const store = new SqliteDocumentStore({ file: path.join(dataDir, 'nmdc.sqlite') });
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

describe('SIGKILL between trigger firing and job creation', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-trigger-kill-'));
  const catalogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-trigger-catalog-'));
  let server: Child | undefined;
  afterAll(async () => {
    if (server) {
      server.kill('SIGKILL');
      await server.exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(catalogDir, { recursive: true, force: true });
  });

  it('every firing becomes exactly one job after a restart, none left pending', async () => {
    const workflowIds = Array.from(
      { length: TRIGGERS },
      (_, i) => `killtest-wf-${String(i).padStart(5, '0')}`,
    );
    const catalog = path.join(catalogDir, 'catalog.json');
    fs.writeFileSync(
      catalog,
      JSON.stringify({
        object_types: [{ id: OBJECT_TYPE, name: 'Reads that start thousands of workflows' }],
        workflows: workflowIds.map((id) => ({ id, name: `Workflow ${id}`, capability_ids: [] })),
        triggers: workflowIds.map((id) => ({ object_type_id: OBJECT_TYPE, workflow_id: id })),
      }),
    );

    server = await startServer(dataDir, catalog);
    const admin = (await json(`${server.url}/token`, form({ grant_type: 'password', ...ADMIN })))
      .access_token as string;
    await json(`${server.url}/sites`, withToken(admin, 'POST', { id: 'kill-lab' }));
    const credentials = await json(
      `${server.url}/sites/kill-lab:generateCredentials`,
      withToken(admin, 'POST', {}),
    );
    const site = (
      await json(`${server.url}/token`, form({ grant_type: 'client_credentials', ...credentials }))
    ).access_token as string;
    const object = await json(
      `${server.url}/objects`,
      withToken(site, 'POST', {
        name: 'reads.fastq.gz',
        size: 1024,
        checksums: [{ type: 'sha256', checksum: 'a'.repeat(64) }],
        access_methods: [{ type: 'https', access_url: { url: 'https://data.example.org/reads.fastq.gz' } }],
      }),
    );

    // The types (and every firing) commit in one transaction; the jobs follow one by one.
    const answered = fetch(
      `${server.url}/objects/${object.id}/types`,
      withToken(site, 'PUT', [OBJECT_TYPE]),
    ).then(
      (res) => `answered ${res.status}`,
      () => 'no answer',
    );
    await server.waitForLog(FIRED, 120_000);
    server.kill('SIGKILL');
    await server.exited;
    server = undefined;
    expect(await answered, 'the kill must land before every job is made').toBe('no answer');

    const atKill = await readStore(dataDir, async (store) => ({
      firings: await store.count('trigger_firings', {}),
      pending: await store.count('trigger_firings', { status: 'pending' }),
      jobs: await store.count('jobs', { 'config.object_id': object.id }),
      types: ((await store.getById('objects', object.id))!.types as string[]) ?? [],
    }));
    expect(atKill.types).toEqual([OBJECT_TYPE]);
    expect(atKill.firings).toBe(TRIGGERS);
    expect(atKill.pending, 'firings still pending at the kill (scale TRIGGERS up if none)').toBeGreaterThan(
      0,
    );
    expect(atKill.jobs).toBeGreaterThan(0);
    expect(atKill.jobs + atKill.pending).toBe(TRIGGERS);

    // The restarted server's first drain turns the pending firings into jobs.
    server = await startServer(dataDir, catalog);
    const filter = encodeURIComponent(JSON.stringify({ 'config.object_id': object.id }));
    for (let i = 0; ; i++) {
      const page = await json(`${server.url}/jobs?filter=${filter}&max_page_size=0&projection=id`);
      if (page.resources.length >= TRIGGERS) break;
      if (i > 1200) throw new Error(`only ${page.resources.length} of ${TRIGGERS} jobs after the restart`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Setting the types again fires nothing more (a new token: the restarted server has another URL, so another issuer).
    const siteAgain = (
      await json(`${server.url}/token`, form({ grant_type: 'client_credentials', ...credentials }))
    ).access_token as string;
    const again = await fetch(
      `${server.url}/objects/${object.id}/types`,
      withToken(siteAgain, 'PUT', [OBJECT_TYPE]),
    );
    expect(again.status).toBe(200);
    server.kill('SIGTERM');
    await server.exited;
    server = undefined;

    await readStore(dataDir, async (store) => {
      expect(await store.count('trigger_firings', { status: { $ne: 'done' } })).toBe(0);
      const jobs = await store.find('jobs', { 'config.object_id': object.id });
      const perWorkflow = new Map<string, number>();
      for (const job of jobs) {
        const workflowId = (job.workflow as { id: string }).id;
        perWorkflow.set(workflowId, (perWorkflow.get(workflowId) ?? 0) + 1);
      }
      expect(jobs).toHaveLength(TRIGGERS);
      expect([...perWorkflow.keys()].sort()).toEqual(workflowIds);
      expect([...perWorkflow.values()].every((n) => n === 1)).toBe(true);
      // Each firing names the one job it made.
      const firings = await store.find('trigger_firings', {});
      const jobIds = new Set(jobs.map((j) => j.id));
      expect(new Set(firings.map((f) => f.job_id)).size).toBe(TRIGGERS);
      expect(firings.every((f) => jobIds.has(f.job_id as string))).toBe(true);
    });
  }, 300_000);
});
