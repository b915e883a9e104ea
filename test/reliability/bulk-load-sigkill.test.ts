/**
 * A bulk load (`npm run load` into an empty collection) killed (SIGKILL) after its records are
 * written but before its indexes are built leaves a mark in the store file; the next open builds
 * those indexes before serving, so the store, the search index (check-index), the attribute index
 * and the edge index agree. A rerun of the load then converges to the input.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './process-faults.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { prepareData } from '../../src/startup.ts';
import { checkCollection, hasDrift } from '../../search/maintenance.ts';
import { indexRecord } from '../../src/store/sqlite/attribute-index.ts';
import { BULK_LOAD_KEY, pendingBulkLoad } from '../../src/store/sqlite/bulk-load.ts';
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

const BIOSAMPLES = 12_000;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Runs the load command; resolves with its exit (code, signal) and output. */
function runLoad(dataDir: string, file: string, killWhen?: (db: Database.Database) => boolean) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/load.ts', '--no-validate', file], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  let killedAt: string | undefined;
  const watcher = killWhen
    ? setInterval(() => {
        const dbFile = path.join(dataDir, 'nmdc.sqlite');
        if (!fs.existsSync(dbFile) || killedAt !== undefined) return;
        let db: Database.Database | undefined;
        try {
          db = new Database(dbFile, { readonly: true, fileMustExist: true });
          if (killWhen(db)) {
            killedAt = 'watched';
            child.kill('SIGKILL');
          }
        } catch {
          // tables not created yet, or busy: look again
        } finally {
          db?.close();
        }
      }, 25)
    : undefined;
  return new Promise<{ code: number | null; signal: string | null; out: string }>((resolve) =>
    child.once('exit', (code, signal) => {
      if (watcher) clearInterval(watcher);
      resolve({ code, signal, out });
    }),
  );
}

async function openAll(dataDir: string) {
  const config = loadConfig({ DATA_DIR: dataDir, DEMO_DATA: 'false', LOG_LEVEL: 'silent' });
  const logger = pino({ level: 'silent' });
  const store = (await openStore(config, logger)) as SqliteDocumentStore;
  const searchIndex = await openSearchIndex(config, store, logger, { catchUpEveryMs: 0 });
  const edgeIndex = await openEdgeIndex(config, store, logger, { catchUpEveryMs: 0 });
  // As the server does before it serves.
  await prepareData({ config, store, searchIndex, edgeIndex, logger });
  return {
    store,
    searchIndex,
    edgeIndex,
    close: async () => {
      await edgeIndex.close();
      await searchIndex.close();
      await store.close();
    },
  };
}

/** The store, its attribute index, the search index and the edge index agree. */
async function expectConsistent(opened: Awaited<ReturnType<typeof openAll>>) {
  const { store, searchIndex, edgeIndex } = opened;
  expect(pendingBulkLoad(store.db)).toBeUndefined();
  for (const collection of ['study_set', 'biosample_set']) {
    const search = await checkCollection(store, searchIndex, collection);
    expect(search.counts, `search index of ${collection}`).toEqual({ missing: 0, stale: 0, extra: 0 });
    expect(hasDrift(await checkCollection(store, edgeIndex, collection)), `edges of ${collection}`).toBe(
      false,
    );
    const stored = store.db
      .prepare('SELECT count(*) AS n, coalesce(sum(size), 0) AS size FROM docs WHERE collection = ?')
      .get(collection) as { n: number; size: number };
    const stats = store.db
      .prepare('SELECT count AS n, size FROM collection_stats WHERE collection = ?')
      .get(collection) as { n: number; size: number } | undefined;
    expect(stats ?? { n: 0, size: 0 }).toEqual(stored);
    // The attribute index is exactly what the records hold.
    const expected: string[] = [];
    for await (const docs of store.scan(collection, 5000))
      for (const doc of docs)
        for (const [p, v] of indexRecord(doc).entries) expected.push(JSON.stringify([p, v, doc.id]));
    const actual = (
      store.db
        .prepare(
          'SELECT p.path, x.value, x.id FROM attr_index x JOIN attr_paths p ON p.key = x.key WHERE p.collection = ?',
        )
        .raw()
        .all(collection) as Array<[string, string | number, string]>
    ).map((r) => JSON.stringify(r));
    expect(actual.sort()).toEqual(expected.sort());
  }
}

describe('a bulk load killed before its indexes are built', () => {
  it('has them built on the next open, and a rerun converges', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bulk-kill-'));
    dirs.push(dataDir);
    const file = path.join(dataDir, 'input.json');
    fs.writeFileSync(
      file,
      JSON.stringify(generateDatabase({ studies: 2, biosamples: BIOSAMPLES, dataObjects: 0 })),
    );

    // Killed once every record is written and the mark says the indexes are not yet built.
    const killed = await runLoad(dataDir, file, (db) => {
      const marked = db.prepare('SELECT 1 FROM meta WHERE key = ?').get(BULK_LOAD_KEY) !== undefined;
      const n = db
        .prepare("SELECT count FROM collection_stats WHERE collection = 'biosample_set'")
        .pluck()
        .get();
      return marked && n === BIOSAMPLES;
    });
    expect(killed.signal, killed.out).toBe('SIGKILL');

    const afterKill = await openAll(dataDir);
    try {
      expect(await afterKill.store.count('biosample_set', {})).toBe(BIOSAMPLES);
      await expectConsistent(afterKill);
      const hits = await afterKill.searchIndex.candidates(
        'biosample_set',
        { kind: 'regex', path: 'id', pattern: '^nmdc:bsm-', flags: '' },
        10,
      );
      expect(hits).toEqual({ all: true }); // every biosample holds it: too many to narrow
    } finally {
      await afterKill.close();
    }

    const rerun = await runLoad(dataDir, file);
    expect(rerun.code, rerun.out).toBe(0);
    expect(rerun.out).toContain(`0 inserted, ${BIOSAMPLES + 2} updated`);
    const afterRerun = await openAll(dataDir);
    try {
      await expectConsistent(afterRerun);
    } finally {
      await afterRerun.close();
    }
  }, 240_000);
});
