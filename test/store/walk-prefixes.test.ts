/**
 * The kept first rows of sorted walks under a filter the attribute index decides: pages cut out of
 * them are the pages MongoDB's order gives, the first page after a write included (the rows are
 * brought up to the write, not read again), in both directions, with ties, records without the
 * sort path and records with several values there; and a walk that must pass over many entries
 * before its page takes turns with other work on the event loop.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import type { Doc, Filter, Sort } from '../../src/store/port.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { sample, TERRESTRIAL } from '../support/correlated-samples.ts';
import { sortDocs, sortKeyOf } from '../../src/store/ordering.ts';

const C = 'biosample_set';

let dir: string;
let store: SqliteDocumentStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-prefix-'));
  store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The records as they are now, by id. */
class Mirror {
  readonly docs = new Map<string, Doc>();
  put(docs: Doc[]): void {
    for (const d of docs) this.docs.set(String(d.id), d);
  }
  drop(ids: string[]): void {
    for (const id of ids) this.docs.delete(id);
  }
  sorted(filter: Filter, sort: Sort): Doc[] {
    const predicate = compileFilter(filter);
    return sortDocs(
      [...this.docs.values()].filter((d) => predicate(d)),
      [...sort, ['id', 1]],
    );
  }
}

const PAGES: Array<[skip: number, limit: number]> = [
  [0, 25],
  [900, 25],
  [400, 40],
  [25, 25],
  [1150, 60],
];

/**
 * Every page and a few cursor pages as MongoDB orders the matches. Returns how many pages were cut
 * from kept rows, and how many read the walk (a cursor after a record without the path, last in
 * descending order, needs none).
 */
async function expectPages(
  mirror: Mirror,
  filter: Filter,
  sort: Sort,
): Promise<{ reused: number; walked: number; firstReused: boolean }> {
  const expected = mirror.sorted(filter, sort);
  const keys: Sort = [...sort, ['id', 1]];
  const reused = store.counters.walkPositionsReused;
  let walked = PAGES.length;
  let firstReused: boolean | undefined;
  for (const [skip, limit] of PAGES) {
    const page = await store.find(C, filter, { sort, skip, limit });
    firstReused ??= store.counters.walkPositionsReused > reused;
    expect(page, `${JSON.stringify(sort)} ${skip}+${limit}`).toEqual(expected.slice(skip, skip + limit));
  }
  for (const skip of [1, 333, expected.length - 5]) {
    const after = keys.map(([p, d]) => sortKeyOf(expected[skip - 1], p, d));
    if (after[0] !== null || sort[0]![1] === 1) walked++;
    const page = await store.find(C, filter, { sort, skip, limit: 20, after });
    expect(page, `${JSON.stringify(sort)} after ${skip}`).toEqual(expected.slice(skip, skip + 20));
  }
  return { reused: store.counters.walkPositionsReused - reused, walked, firstReused: firstReused! };
}

describe('kept first rows of sorted walks', () => {
  const docs = Array.from({ length: 3000 }, (_, i) => sample(i));

  // Slices of 40 entries keep only the rows the pages asked for need: writes past them stay out.
  // Kept rows cut at 300 leave deeper pages to a walk on past them.
  it.each([
    [4000, 25_000],
    [40, 25_000],
    [40, 300],
  ])(
    'answer the first page after each kind of write from rows brought up to it (slices of %i entries, %i rows kept)',
    async (slice, kept) => {
      await store.close();
      store = new SqliteDocumentStore({
        file: path.join(dir, 'nmdc.sqlite'),
        walkPrefixes: { slice, rowsPerWalk: kept },
      });
      const whole = slice > docs.length;
      await store.upsertMany(C, docs);
      const mirror = new Mirror();
      mirror.put(docs);
      const terrestrial = () =>
        [...mirror.docs.values()].filter((d) => d.ecosystem_category === 'Terrestrial');
      const writes: Array<[string, () => Promise<void>]> = [
        [
          'new matches before every kept row, and among them',
          async () => {
            const added = Array.from({ length: 30 }, (_, i) => ({
              ...sample(20_000 + i, i % 2 ? 'Aardvark' : 'Permafrost'),
              ecosystem_category: 'Terrestrial',
            }));
            await store.upsertMany(C, added);
            mirror.put(added);
          },
        ],
        [
          'matches renamed to later and earlier positions, and to a shared name',
          async () => {
            const moved = terrestrial()
              .slice(0, 40)
              .map((d, i) => ({
                ...d,
                name: i % 3 === 0 ? 'Zebra' : i % 3 === 1 ? 'Abc' : 'Soil sample shared',
              }));
            await store.upsertMany(C, moved);
            mirror.put(moved);
          },
        ],
        [
          'matches leaving the filter, others joining it',
          async () => {
            const leaving = terrestrial()
              .slice(5, 25)
              .map((d) => ({ ...d, ecosystem_category: 'Aquatic' }));
            const joining = [...mirror.docs.values()]
              .filter((d) => d.ecosystem_category === 'Plants')
              .slice(0, 25)
              .map((d) => ({ ...d, ecosystem_category: 'Terrestrial' }));
            await store.upsertMany(C, [...leaving, ...joining]);
            mirror.put([...leaving, ...joining]);
          },
        ],
        [
          'matches deleted',
          async () => {
            const gone = terrestrial()
              .slice(10, 30)
              .map((d) => String(d.id));
            await store.deleteMany(C, { id: { $in: gone } });
            mirror.drop(gone);
          },
        ],
        [
          'matches losing their name or given several',
          async () => {
            const changed = terrestrial()
              .slice(0, 12)
              .map((d, i) => {
                const { name, ...rest } = d;
                return i % 2 ? rest : { ...rest, name: ['Moss sample', String(name)] };
              });
            await store.upsertMany(C, changed);
            mirror.put(changed);
          },
        ],
      ];
      for (const direction of [1, -1] as const) {
        const sort: Sort = [['name', direction]];
        // The first round reads the rows, every later one cuts its pages out of them.
        const first = await expectPages(mirror, TERRESTRIAL, sort);
        // Pages after the first start from kept rows; a cursor past rows kept in part seeks.
        if (whole) expect(first.reused).toBe(first.walked - 1);
        else expect(first.reused).toBeGreaterThanOrEqual(PAGES.length - 1);
        for (const [what, write] of writes) {
          await write();
          const after = await expectPages(mirror, TERRESTRIAL, sort);
          expect(after.firstReused, what).toBe(true);
          // Rows kept whole serve every page; a cursor past partly kept rows seeks instead.
          if (whole) expect(after.reused, what).toBe(after.walked);
        }
      }
      // Two conditions, one an $in: a walk of its own, also kept in step.
      const both: Filter = {
        ecosystem_category: { $in: ['Terrestrial', 'Aquatic'] },
        type: 'nmdc:Biosample',
      };
      await expectPages(mirror, both, [['name', 1]]);
      await writes[2]![1]();
      const after = await expectPages(mirror, both, [['name', 1]]);
      expect(after.firstReused).toBe(true);
    },
  );

  it('reads them again when more records were written than are worth catching up', async () => {
    await store.upsertMany(C, docs);
    const mirror = new Mirror();
    mirror.put(docs);
    const sort: Sort = [['name', 1]];
    await expectPages(mirror, TERRESTRIAL, sort);
    const renamed = docs.slice(0, 1500).map((d) => ({ ...d, name: `Soil renamed ${String(d.id)}` }));
    await store.upsertMany(C, renamed);
    mirror.put(renamed);
    // The first page reads them again, the others are cut from what it read.
    const after = await expectPages(mirror, TERRESTRIAL, sort);
    expect(after.reused).toBe(after.walked - 1);
  });

  it('leaves them unused while a bulk load is under way, and uses them again after it', async () => {
    await store.upsertMany(C, docs);
    const mirror = new Mirror();
    mirror.put(docs);
    const sort: Sort = [['name', -1]];
    await expectPages(mirror, TERRESTRIAL, sort);
    // A load's mark (its records may be in before their index entries): pages walk the index.
    const mark = JSON.stringify({ loads: [{ load: 'test', pid: process.pid, collections: [C] }] });
    store.db.prepare("INSERT INTO meta(key, value) VALUES ('bulk_load', ?)").run(mark);
    const during = await expectPages(mirror, TERRESTRIAL, sort);
    expect(during.firstReused).toBe(false);
    store.db.prepare("DELETE FROM meta WHERE key = 'bulk_load'").run();
    const after = await expectPages(mirror, TERRESTRIAL, sort);
    expect(after.reused).toBe(after.walked);
  });

  it('takes turns with other work while a walk passes over many entries before its page', async () => {
    // One slice per turn (none passes the time a turn may take).
    await store.close();
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), walkPrefixes: { turnMs: 0 } });
    // 12,000 records sorting before the first match: three slices of the index or more.
    const before = Array.from({ length: 12_000 }, (_, i) => ({
      id: `nmdc:bsm-13-${String(i).padStart(6, '0')}`,
      name: `Leaf ${String(i).padStart(6, '0')}`,
      ecosystem_category: 'Plants',
    }));
    const matches = Array.from({ length: 1500 }, (_, i) => ({
      id: `nmdc:bsm-14-${String(i).padStart(6, '0')}`,
      name: `Soil ${String(i).padStart(6, '0')}`,
      ecosystem_category: 'Terrestrial',
    }));
    await store.upsertMany(C, [...before, ...matches]);
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const page = await store.find(C, TERRESTRIAL, { sort: [['name', 1]], skip: 0, limit: 5 });
    done = true;
    expect(page.map((d) => d.id)).toEqual(matches.slice(0, 5).map((d) => d.id));
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});
