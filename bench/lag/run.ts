/**
 * Searches while a search index written outside the store's transaction (Elasticsearch, or FTS5
 * beside MongoDB, in a scaled-out service) is behind the store: the planner adds the records
 * written past the index's watermark from the change log, so no search misses a fresh write. Here
 * the index is FTS5 in a database of its own beside the embedded store (`hooked: false`, caught up
 * by `catchUp` as the maintenance loop does), left `--lags` thousand changes behind (rounds of
 * updates to 1,000 records, then one new record the search must find). Beside each lag, the same
 * search with the index caught up (lag 0): what being behind costs.
 *
 *   npm run bench:lag -- [--searches 20] [--lags 10,50,150]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { flag, percentile, table } from '../support/embedded.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { catchUp } from '../../search/maintenance.ts';

const C = 'biosample_set';
const searches = flag('searches', 20);
const lagsAt = process.argv.indexOf('--lags');
const lags = (lagsAt >= 0 ? (process.argv[lagsAt + 1] ?? '') : '10,50,150').split(',').map(Number);
/** Refuses a flag's value: says what it takes, and exits with 2. */
function refuse(message: string): never {
  console.error(message);
  process.exit(2);
}
if (!(Number.isInteger(searches) && searches >= 2 && searches <= 10_000))
  refuse('--searches: a whole number from 2 to 10000');
if (!lags.every((n) => Number.isInteger(n) && n >= 1 && n <= 1000))
  refuse('--lags: thousands of changes, whole numbers from 1 to 1000, comma-separated (10,50,150)');
const base = Array.from({ length: 1000 }, (_, i) => ({
  id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
  name: `sample ${i}`,
}));
const needle = { id: 'nmdc:bsm-11-zzzzzz', name: 'the needle of Harvard Forest' };
const byNeedle = { name: { $regex: 'needle of Harvard' } };

/** Times of `searches` searches for the needle, ms, in the order they ran. */
async function timeSearches(planner: QueryPlanner): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < searches; i++) {
    const t = performance.now();
    const found = await planner.find(C, byNeedle);
    times.push(performance.now() - t);
    if (found.length !== 1 || found[0]!.id !== needle.id)
      throw new Error('the search missed the fresh record');
  }
  return times;
}

async function measure(rounds: number): Promise<{ behind: number[]; caughtUp: number[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-lag-'));
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
  try {
    await store.upsertMany(C, base);
    await catchUp(store, index);
    for (let round = 0; round < rounds; round++)
      await store.upsertMany(
        C,
        base.map((d) => ({ ...d, name: `${d.name} round ${round}` })),
      );
    await store.upsertMany(C, [needle]);
    const behind = await timeSearches(new QueryPlanner(store, index));
    await catchUp(store, index);
    const caughtUp = await timeSearches(new QueryPlanner(store, index));
    return { behind, caughtUp };
  } finally {
    await index.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`npm run bench:lag -- --searches ${searches} --lags ${lags.join(',')}\n`);
  const rows: Array<Record<string, string>> = [];
  for (const rounds of lags) {
    const { behind, caughtUp } = await measure(rounds);
    const rest = behind.slice(1);
    const p50 = percentile(rest, 50);
    const peer = percentile(caughtUp.slice(1), 50);
    rows.push({
      'changes behind': (rounds * 1000 + 1).toLocaleString('en-US'),
      'first search': `${behind[0]!.toFixed(1)} ms`,
      'later searches, p50 / max': `${p50.toFixed(2)} / ${Math.max(...rest).toFixed(1)} ms`,
      'caught up, p50': `${peer.toFixed(2)} ms`,
      ratio: `${(p50 / peer).toFixed(2)}x`,
    });
  }
  console.log(table(rows));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
