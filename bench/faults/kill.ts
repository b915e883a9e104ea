/**
 * `npx tsx bench/faults/kill.ts [--biosamples 100000]`: SIGKILL the loader CLI in the middle of
 * loading, then check `PRAGMA integrity_check`, the index against the records (`check-index`),
 * that every collection holds whole committed batches and no more than planned, and that a rerun
 * (upserts by id) completes the load.
 * (Account changes under SIGKILL: test/reliability/faults.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { plannedCounts } from '../../src/data/generator.ts';

const i = process.argv.indexOf('--biosamples');
const biosamples = i >= 0 ? Number(process.argv[i + 1]) : 100_000;
const root = path.resolve(import.meta.dirname, '../..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-kill-'));
const env = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'warn' };
const file = path.join(dir, 'records.json.gz');
const options = {
  studies: Math.max(1, biosamples / 1000),
  biosamples,
  dataObjects: biosamples / 5,
  seed: 11,
};
const tsx = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: root, env, encoding: 'utf8' });
const log = (line: string) => process.stdout.write(`${line}\n`);

function counts(): Record<string, number> {
  const db = new Database(path.join(dir, 'nmdc.sqlite'), { readonly: true });
  const integrity = db.pragma('integrity_check', { simple: true });
  db.close();
  log(`integrity_check: ${String(integrity)}`);
  if (integrity !== 'ok') process.exitCode = 1;
  const stats = tsx([
    '-e',
    `(async () => {
    const { SqliteDocumentStore } = await import('./src/store/sqlite/index.ts');
    const s = new SqliteDocumentStore({ file: ${JSON.stringify(path.join(dir, 'nmdc.sqlite'))}, databaseName: 'nmdc' });
    const out = {};
    for (const c of await s.nonEmptyCollections()) out[c] = await s.count(c, {});
    console.log(JSON.stringify(out)); await s.close(); })();`,
  ]);
  return JSON.parse(stats.stdout.trim().split('\n').pop() || '{}');
}

async function main(): Promise<void> {
  const gen = tsx([
    'src/cli/generate-data.ts',
    '--studies',
    String(options.studies),
    '--biosamples',
    String(biosamples),
    '--data-objects',
    String(options.dataObjects),
    '--seed',
    '11',
    '--out',
    file,
  ]);
  if (gen.status !== 0) throw new Error(gen.stderr);
  const planned = plannedCounts(options);
  log(`planned: ${JSON.stringify(planned)}`);
  const loader = spawn(process.execPath, ['--import', 'tsx', 'src/cli/load.ts', file], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const started = Date.now();
  await new Promise<void>((resolve) => {
    loader.stderr.on('data', (d) => {
      const m = /(\d+) records, (\d+)%/.exec(String(d));
      if (m && Number(m[2]) >= 40 && loader.exitCode === null) {
        log(
          `SIGKILL to the loader after ${((Date.now() - started) / 1000).toFixed(1)} s at ${m[1]} records read (${m[2]}%)`,
        );
        loader.kill('SIGKILL');
        resolve();
      }
    });
    loader.once('exit', () => resolve());
  });
  await new Promise((r) =>
    loader.exitCode !== null || loader.signalCode ? r(null) : loader.once('exit', r),
  );
  const after = counts();
  log(`after the kill: ${JSON.stringify(after)}`);
  for (const [c, n] of Object.entries(after)) {
    const want = planned[c as keyof typeof planned];
    // The loader commits in batches: a kill leaves whole batches, never more than planned.
    log(`  ${c}: ${n} of ${want} — ${n === want ? 'complete' : 'committed batches only'}`);
    if (n > want) process.exitCode = 1;
  }
  const check = tsx(['src/cli/check-index.ts']);
  log(`check-index (exit ${check.status}): ${check.stdout.trim().split('\n').pop()}`);
  if (check.status !== 0 && Object.keys(after).length > 0) process.exitCode = 1;
  const rerun = tsx(['src/cli/load.ts', file]);
  log(`rerun: ${rerun.stderr.trim().split('\n').pop()}`);
  const final = counts();
  const complete = Object.entries(planned).every(([c, n]) => final[c] === n);
  log(`after the rerun: ${JSON.stringify(final)} — ${complete ? 'complete' : 'INCOMPLETE'}`);
  const check2 = tsx(['src/cli/check-index.ts']);
  log(`check-index (exit ${check2.status}): ${check2.stdout.trim().split('\n').pop()}`);
  if (!complete || check2.status !== 0) process.exitCode = 1;
}

main()
  .catch((err) => {
    process.stderr.write(`kill benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => fs.rmSync(dir, { recursive: true, force: true }));
