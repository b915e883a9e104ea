/**
 * The edge index in the maintenance commands (`check-index` finds its drift, `reindex` repairs
 * it) and in a store file from before it existed (its edges are built once, on open).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { loadConfig } from '../../src/config.ts';
import { walk } from '../../src/provenance/walk.ts';

const STUDY = { id: 'nmdc:sty-11-cli', type: 'nmdc:Study' };
const SAMPLES = Array.from({ length: 12 }, (_, i) => ({
  id: `nmdc:bsm-11-cli${i}`,
  type: 'nmdc:Biosample',
  associated_studies: [STUDY.id],
}));

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'graph-cli-'));
  dirs.push(dir);
  return dir;
}

describe('edges in the maintenance commands', () => {
  it('check-index reports edge drift, reindex repairs it', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'nmdc.sqlite');
    const store = new SqliteDocumentStore({ file });
    SqliteEdgeIndex.attachTo(store).markBuilt();
    await store.upsertMany('study_set', [STUDY]);
    await store.upsertMany('biosample_set', SAMPLES);
    await store.close();
    // Drift behind the service's back: one biosample's node forgotten, another's fingerprint changed.
    execFileSync(process.execPath, [
      '-e',
      `const D=require('better-sqlite3');const d=new D(${JSON.stringify(file)});` +
        `d.prepare("DELETE FROM graph_nodes WHERE id = ?").run(${JSON.stringify(SAMPLES[2]!.id)});` +
        `d.prepare("UPDATE graph_nodes SET fingerprint = 'x' WHERE id = ?").run(${JSON.stringify(SAMPLES[5]!.id)});d.close();`,
    ]);
    const env = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' };
    const run = (script: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', script], { env, encoding: 'utf8' });
    const drift = run('src/cli/check-index.ts');
    expect(drift.status).toBe(1);
    expect(drift.stdout).toContain(
      'edges of biosample_set: DRIFT — 12 records checked, 1 missing, 1 stale, 0 extra',
    );
    expect(drift.stdout).toContain('study_set: ok — 1 records checked');
    const rebuilt = run('src/cli/reindex.ts');
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(rebuilt.stdout).toMatch(/^edges of biosample_set: 12 records in [\d.]+ s/m);
    const exact = run('src/cli/check-index.ts');
    expect(exact.status, exact.stdout).toBe(0);
    expect(exact.stdout).toContain(
      'edges of biosample_set: ok — 12 records checked, 0 missing, 0 stale, 0 extra',
    );
  }, 60_000);

  it('builds the edges of a store file from before the edge index, once, on open', async () => {
    const dir = tempDir();
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    await store.upsertMany('study_set', [STUDY]);
    await store.upsertMany('biosample_set', SAMPLES);
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
    const edges = await openEdgeIndex(config, store, pino({ level: 'silent' }));
    const reached = await walk(edges, [STUDY.id], 'downstream');
    expect([...reached.keys()].sort()).toEqual(SAMPLES.map((s) => s.id).sort());
    // From now on the hook writes them with the records.
    await store.upsertMany('biosample_set', [
      { id: 'nmdc:bsm-11-clinew', type: 'nmdc:Biosample', associated_studies: [STUDY.id] },
    ]);
    expect((await walk(edges, [STUDY.id], 'downstream')).has('nmdc:bsm-11-clinew')).toBe(true);
    await store.close();
  });
});
