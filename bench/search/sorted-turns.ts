/**
 * A filtered sorted listing in the store's own process: the first request of page 1 and page 401
 * (`ecosystem_category: Terrestrial` sorted by name, both directions), their p50 after it, and the
 * first request of each after a write (one match renamed, one added), each with the longest turn
 * the event loop waited for meanwhile (a request must never hold it for more than 100 ms).
 *
 *   npx tsx bench/search/sorted-turns.ts <store file>
 *
 * The store file is one `npm run load` filled with `npm run generate-data` biosamples (DATA_DIR's
 * nmdc.sqlite); the run writes to it, so give it a copy.
 */
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import type { Doc, Sort } from '../../src/store/port.ts';

const file = process.argv[2];
if (!file) throw new Error('usage: npx tsx bench/search/sorted-turns.ts <store file (a copy)>');
const store = new SqliteDocumentStore({ file });
const C = 'biosample_set';
const filter = { ecosystem_category: 'Terrestrial' };

// The longest wait between two turns of the event loop while a request runs.
let longest = 0;
let last = performance.now();
let running = true;
const tick = () => {
  const now = performance.now();
  longest = Math.max(longest, now - last);
  last = now;
  if (running) setImmediate(tick);
};
setImmediate(tick);

const rows: Array<Record<string, string>> = [];
const find = (sort: Sort, skip: number) => store.find(C, filter, { sort, skip, limit: 25 });

async function once(what: string, sort: Sort, skip: number): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  longest = 0;
  last = performance.now();
  const t = performance.now();
  await find(sort, skip);
  const ms = performance.now() - t;
  await new Promise((resolve) => setImmediate(resolve));
  rows.push({ request: what, ms: ms.toFixed(2), 'longest turn ms': longest.toFixed(1) });
}

async function p50(what: string, sort: Sort, skip: number): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = performance.now();
    await find(sort, skip);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  rows.push({ request: `${what}, p50 of 30`, ms: times[15]!.toFixed(2), 'longest turn ms': '-' });
}

for (const direction of [1, -1] as const) {
  const sort: Sort = [['name', direction]];
  const name = `sort=name${direction === 1 ? '' : ':desc'}`;
  await once(`${name}, page 1, first asked`, sort, 0);
  await once(`${name}, page 401, first asked`, sort, 10_000);
  await p50(`${name}, page 1`, sort, 0);
  await p50(`${name}, page 401`, sort, 10_000);
  const [shown] = (await find(sort, 5)) as [Doc];
  await store.upsertMany(C, [
    { ...shown, name: `Aa renamed ${direction}` },
    { ...shown, id: `${String(shown.id)}-new${direction}`, name: `Soil sample new ${direction}` },
  ]);
  await once(`${name}, page 1, first after a write`, sort, 0);
  await once(`${name}, page 401, first after a write`, sort, 10_000);
}
running = false;
await store.close();
console.log(`npx tsx bench/search/sorted-turns.ts ${file}`);
console.table(rows);
