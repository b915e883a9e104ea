/**
 * A metadata submission killed (SIGKILL) while its records are being written leaves nothing of
 * itself: after a restart on the same data folder the record counts, the search index, the
 * provenance edges, the stored objects and the runs are exactly as before it. The server runs as
 * a child process; the kill is sent when it logs that the submission's atomic write begins (the
 * write of tens of thousands of biosamples, with their index entries, runs for seconds).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLoggingServer, type LoggingServer } from './process-faults.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

const BIOSAMPLES = 40_000;
const ADMIN = { username: 'root', password: 'estuary-root-password-7720' };
const APPLYING = 'metadata submission: applying';

type Child = LoggingServer;

const startServer = (dataDir: string) =>
  startLoggingServer({
    DATA_DIR: dataDir,
    MAX_BODY_BYTES: String(256 * 1024 * 1024),
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });

async function json(url: string, init?: RequestInit): Promise<any> {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

describe('SIGKILL during a large JSON submission', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-submit-kill-'));
  let server: Child | undefined;
  afterAll(async () => {
    if (server) {
      server.kill('SIGKILL');
      await server.exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves records, search index, edges, objects and runs exactly as before', async () => {
    const db = generateDatabase({ studies: 1, biosamples: BIOSAMPLES, dataObjects: 0 });
    const study = db.study_set![0]!;
    const kept = db.biosample_set!.slice(0, 10).map((b) => ({ ...b, name: `${b.name} keptcore` }));
    const big = {
      biosample_set: db.biosample_set!.map((b) => ({ ...b, name: `${b.name} killedcore` })),
    };

    server = await startServer(dataDir);
    const token = (
      await json(`${server.url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', ...ADMIN }),
      })
    ).access_token as string;
    const submit = (payload: unknown) =>
      fetch(`${server!.url}/metadata/json:submit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(payload),
      });

    const first = await submit({ study_set: [study], biosample_set: kept });
    expect(first.status, await first.clone().text()).toBe(200);

    const observe = async (url: string) => ({
      biosamples: (await json(`${url}/biosamples?per_page=1`)).meta.count,
      studies: (await json(`${url}/studies?per_page=1`)).meta.count,
      keptBySearch: (await json(`${url}/biosamples?filter=name.search:keptcore&per_page=1`)).meta.count,
      killedBySearch: (await json(`${url}/biosamples?filter=name.search:killedcore&per_page=1`)).meta.count,
      linked: (
        (
          await json(
            `${url}/nmdcschema/linked_instances?ids=${encodeURIComponent(study.id)}&hydrate=false&max_page_size=2000`,
          )
        ).resources as Array<{ id: string }>
      )
        .map((r) => r.id)
        .sort(),
      firstBiosample: await json(`${url}/nmdcschema/ids/${encodeURIComponent(kept[0]!.id)}`),
    });
    const before = await observe(server.url);
    expect(before).toMatchObject({ biosamples: 10, studies: 1, keptBySearch: 10, killedBySearch: 0 });
    expect(before.linked).toEqual(expect.arrayContaining(kept.map((b) => b.id)));

    // The large submission; killed once it logs that its atomic write begins.
    const answered = submit(big).then(
      (res) => `answered ${res.status}`,
      () => 'no answer',
    );
    const wal = path.join(dataDir, 'nmdc.sqlite-wal');
    const walSize = () => fs.statSync(wal, { throwIfNoEntry: false })?.size ?? 0;
    const walBefore = walSize();
    await server.waitForLog(APPLYING, 120_000);
    // Killed once the write has spilled uncommitted pages to the write-ahead log: mid-transaction,
    // with part of it on disk, the case recovery must undo.
    for (let waited = 0; walSize() <= walBefore + 4 * 1024 * 1024 && waited < 60_000; waited += 10) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const walAtKill = walSize();
    server.kill('SIGKILL');
    await server.exited;
    expect(await answered, 'the kill must land before the write commits').toBe('no answer');
    expect(walAtKill, 'the write was under way when killed').toBeGreaterThan(walBefore);
    server = undefined;

    server = await startServer(dataDir);
    const after = await observe(server.url);
    expect(after).toEqual(before);
    server.kill('SIGTERM');
    await server.exited;
    server = undefined;

    // Only the first submission's object and run exist; the killed one left no record.
    const store = new SqliteDocumentStore({ file: path.join(dataDir, 'nmdc.sqlite') });
    try {
      expect(await store.count('objects', {})).toBe(1);
      const runs = await store.find('runs', {});
      expect(runs.map((r) => r.status)).toEqual(['COMPLETE']);
      expect(await store.count('biosample_set', {})).toBe(10);
    } finally {
      await store.close();
    }
  }, 300_000);
});
