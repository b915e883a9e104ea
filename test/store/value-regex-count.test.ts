/**
 * Counting a one-path `$regex` on an attribute-indexed path from the index's distinct values gives
 * exactly the compiled filter's count, whatever shape the records have at the path, and reads the
 * bodies of the irregular records only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/store/filter.ts';
import type { Doc, Filter } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import type { StoreContext } from '../../src/store/sqlite/store-context.ts';
import { countRegexOnValues, ENTRIES_SLICE } from '../../src/store/sqlite/value-regex-count.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { escapeRegex } from '../../src/query/compact.ts';
import { withTemporaryStore } from '../support/temporary-store.ts';

const C = 'biosample_set';

/** Each shape with whether `collection_date.has_raw_value.search:-03-` matches it. */
const shapes: Array<[shape: Record<string, unknown>, matchesMarch: boolean]> = [
  [{ collection_date: { has_raw_value: '2016-03-05' } }, true],
  // "03-" and "-03" both occur, apart: every trigram of "-03-" is there, the substring is not.
  [{ collection_date: { has_raw_value: '2003-04-03' } }, false],
  [{ collection_date: { has_raw_value: '2016-04-05' } }, false],
  // The value at another path, and a key holding a dot, are not at the path.
  [{ collection_date: { has_raw_value: '2016-05-01' }, other_date: '2016-03-01' }, false],
  [{ 'collection_date.has_raw_value': '2016-03-01' }, false],
  [{ collection_date: '2016-03-01' }, false],
  // Arrays: of strings (one level), of objects, nested (not traversed), mixed and empty.
  [{ collection_date: { has_raw_value: ['2016-01-01', '2016-03-02'] } }, true],
  [{ collection_date: { has_raw_value: ['2016-03-02', '2016-03-02'] } }, true],
  [{ collection_date: { has_raw_value: ['2016-03-02', '2017-03-02'] } }, true],
  [{ collection_date: { has_raw_value: ['2016-01-02', '2017-01-02'] } }, false],
  [{ collection_date: [{ has_raw_value: '2016-03-07' }] }, true],
  [{ collection_date: [{ has_raw_value: '2016-01-07' }, { has_raw_value: '2016-03-07' }] }, true],
  [{ collection_date: [[{ has_raw_value: '2016-03-07' }]] }, false],
  [{ collection_date: { has_raw_value: [['2016-03-08']] } }, false],
  [{ collection_date: { has_raw_value: ['2016-03-08', null] } }, true],
  [{ collection_date: { has_raw_value: [] } }, false],
  // Other kinds of leaves.
  [{ collection_date: { has_raw_value: 20160301 } }, false],
  [{ collection_date: { has_raw_value: null } }, false],
  [{ collection_date: { has_raw_value: { v: '2016-03-01' } } }, false],
  [{ collection_date: { has_raw_value: true } }, false],
  [{ collection_date: null }, false],
  [{}, false],
  // Strings SQLite cannot hold as they are: a lone surrogate.
  [{ collection_date: { has_raw_value: '2016-03-\uD800' } }, true],
  [{ collection_date: { has_raw_value: '2016-04-\uD800' } }, false],
];

const docs: Doc[] = Array.from({ length: 960 }, (_, i) => {
  const [shape] = shapes[i % shapes.length]!;
  return {
    id: `nmdc:bsm-11-${String(i).padStart(5, '0')}`,
    // Regular names: one per record, some matching case-insensitively through Unicode folding.
    name: i % 7 === 0 ? `Sample \u212Aellogg ${i}` : `sample ${i % 3 === 0 ? 'kellogg' : 'toolik'} ${i}`,
    ecosystem_category: i % 2 === 0 ? 'Terrestrial' : 'Aquatic',
    ...shape,
  };
});

const search = (p: string, text: string): Filter => ({ [p]: { $regex: escapeRegex(text), $options: 'i' } });
const expectedCount = (filter: Filter) => docs.filter(compileFilter(filter)).length;

describe('counting a one-path regex on the attribute index values', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  let planner: QueryPlanner;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-value-regex-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    planner = new QueryPlanner(store, FtsSearchIndex.attachTo(store));
    await store.upsertMany(C, docs);
  });

  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("counts the compiled filter's matches for every shape at the path", async () => {
    const march = search('collection_date.has_raw_value', '-03-');
    const expected = docs.filter((_, i) => shapes[i % shapes.length]![1]).length;
    expect(expectedCount(march)).toBe(expected);
    expect(await store.countFromIndex(C, march)).toBe(expected);
    for (const filter of [
      search('collection_date.has_raw_value', '2016'),
      search('collection_date.has_raw_value', '03-0'),
      { 'collection_date.has_raw_value': { $regex: '^2016-0[1-3]' } },
      { 'collection_date.has_raw_value': { $regex: '\\d{4}-03-\\d{2}$' } },
      { 'collection_date.has_raw_value': { $regex: 'zzz' } },
      search('name', 'kellogg'),
      { name: { $regex: 'kellogg' } },
      { name: { $regex: '^sample toolik 1' } },
      search('ecosystem_category', 'terr'),
    ]) {
      const n = expectedCount(filter);
      expect(await store.countFromIndex(C, filter), JSON.stringify(filter)).toBe(n);
      expect(await planner.count(C, filter), JSON.stringify(filter)).toBe(n);
    }
  });

  it('parses only the records irregular at the path', async () => {
    // Several distinct values, a null beside values, other kinds of leaves, lone surrogates.
    const irregular = docs.filter((d) => {
      const at = (d.collection_date as { has_raw_value?: unknown } | null | undefined)?.has_raw_value;
      const reached = Array.isArray(d.collection_date)
        ? d.collection_date.map((e: { has_raw_value: unknown }) => e.has_raw_value)
        : Array.isArray(at)
          ? at
          : [at];
      const strings = new Set(reached.filter((v) => typeof v === 'string'));
      return (
        reached.length === 0 ||
        strings.size > 1 ||
        (strings.size > 0 && reached.includes(null)) ||
        reached.some((v) => (typeof v === 'object' && v !== null) || typeof v === 'boolean') ||
        [...strings].some((v) => /[\uD800-\uDFFF]/.test(v as string))
      );
    }).length;
    expect(irregular).toBeGreaterThan(0);
    const before = store.counters.bodiesParsed;
    await store.countFromIndex(C, search('collection_date.has_raw_value', '-03-'));
    expect(store.counters.bodiesParsed - before).toBe(irregular);
    const names = store.counters.bodiesParsed;
    expect(await store.countFromIndex(C, search('name', 'kellogg'))).toBe(
      expectedCount(search('name', 'kellogg')),
    );
    expect(store.counters.bodiesParsed).toBe(names);
  });

  it('follows writes: a record changed or removed is counted as it is now', async () => {
    const march = search('collection_date.has_raw_value', '-03-');
    const before = (await store.countFromIndex(C, march))!;
    const changed = { ...docs[0]!, collection_date: { has_raw_value: '2016-06-05' } }; // was March
    const added = {
      id: 'nmdc:bsm-11-99999',
      collection_date: { has_raw_value: ['2019-03-01', '2019-03-02'] },
    };
    await store.upsertMany(C, [changed, added]);
    expect(await store.countFromIndex(C, march)).toBe(before);
    await store.deleteMany(C, { id: added.id });
    expect(await store.countFromIndex(C, march)).toBe(before - 1);
    await store.upsertMany(C, [docs[0]!]);
    expect(await store.countFromIndex(C, march)).toBe(before);
  });

  it('leaves other filters, paths and crowded paths to the other counts', async () => {
    expect(await store.countFromIndex(C, { other_date: { $regex: '-03-' } })).toBeUndefined();
    expect(
      await store.countFromIndex(C, { 'collection_date.has_raw_value': { $regex: '-03-' }, name: 'x' }),
    ).toBeUndefined();
    expect(await store.countFromIndex(C, { 'collection_date.has_raw_value': '2016-03-05' })).toBeUndefined();
    // A path never indexed in the collection holds no string: nothing matches.
    expect(await store.countFromIndex('study_set', search('name', 'kellogg'))).toBe(0);
    // Too many distinct names, or too many irregular records: the planner counts another way, exactly.
    const names = search('name', 'toolik');
    expect(await store.countFromIndex(C, names, { values: 10, irregular: 1000 })).toBeUndefined();
    const march = search('collection_date.has_raw_value', '-03-');
    expect(await store.countFromIndex(C, march, { values: 1000, irregular: 3 })).toBeUndefined();
    expect(await planner.count(C, march)).toBe(expectedCount(march));
  });

  it('gives the planner an exact estimate for a page, with no sample drawn, and the same page', async () => {
    const fresh = new QueryPlanner(store, FtsSearchIndex.attachTo(store));
    const sampleTexts = store.sampleTexts.bind(store);
    let drawn = 0;
    store.sampleTexts = async (collection, size) => {
      drawn++;
      return sampleTexts(collection, size);
    };
    try {
      const march = search('collection_date.has_raw_value', '-03-');
      const plan = await fresh.planFind(C, march, { limit: 25 }, 'page');
      expect(plan.estimate).toMatchObject({
        source: 'attribute index',
        matches: expectedCount(march),
        exact: true,
      });
      expect(plan.summary).toContain(`${expectedCount(march)} matches (counted on the attribute index)`);
      const page = await fresh.find(C, march, { limit: 25, skip: 10 });
      const test = compileFilter(march);
      const expected = docs
        .filter((d) => test(d))
        .map((d) => d.id)
        .sort()
        .slice(10, 35);
      expect(page.map((d) => d.id)).toEqual(expected);
      expect(await fresh.count(C, march)).toBe(expectedCount(march));
      expect(drawn).toBe(0);
      // A filter the index cannot count is estimated from the sample, as before.
      await fresh.planFind(C, { other_date: { $regex: '-03-' } }, { limit: 25 }, 'page');
      expect(drawn).toBe(1);
      // Once drawn, the sample estimates pages (no walk per page); counts still read the index.
      const april = search('collection_date.has_raw_value', '-04-');
      expect((await fresh.planFind(C, april, { limit: 25 }, 'page')).estimate.source).toBe('sample');
      expect((await fresh.planFind(C, april, {}, 'count')).estimate.source).toBe('attribute index');
    } finally {
      store.sampleTexts = sampleTexts;
    }
  });

  it('explains such a count as read off the attribute index, and runs it that way', async () => {
    const march = search('collection_date.has_raw_value', '-03-');
    const explained = (await new QueryPlanner(store, FtsSearchIndex.attachTo(store)).explain(
      C,
      march,
      {},
      'count',
      'executionStats',
      'nmdc',
    )) as {
      queryPlanner: { winningPlan: { accessPath: string }; estimate: { source: string } };
      executionStats: { count: number; accessPath: string };
    };
    expect(explained.queryPlanner.estimate.source).toBe('attribute index');
    expect(explained.queryPlanner.winningPlan.accessPath).toBe('attribute-index');
    expect(explained.executionStats.count).toBe(expectedCount(march));
    // A filter the index cannot count keeps its other paths.
    const other = (await planner.explain(
      C,
      { other_date: { $regex: '-03-' } },
      {},
      'count',
      'executionStats',
      'nmdc',
    )) as {
      queryPlanner: { winningPlan: { accessPath: string } };
      executionStats: { count: number };
    };
    expect(other.queryPlanner.winningPlan.accessPath).not.toBe('attribute-index');
    expect(other.executionStats.count).toBe(expectedCount({ other_date: { $regex: '-03-' } }));
  });

  it('counts a path with many distinct values in chunks, exactly, and starts again when a write comes between them', async () => {
    const ctx = (store as unknown as { context: StoreContext }).context;
    const filters = [
      search('collection_date.has_raw_value', '-03-'),
      search('name', 'kellogg'),
      { name: { $regex: '^sample toolik 1' } },
      { 'collection_date.has_raw_value': { $regex: 'zzz' } },
      { other_date: { $regex: '-03-' } },
    ];
    for (const filter of filters.slice(0, 4)) {
      for (const chunk of [1, 7, 5000]) {
        expect(await countRegexOnValues(ctx, C, filter, { chunk }), JSON.stringify({ filter, chunk })).toBe(
          expectedCount(filter),
        );
      }
    }
    expect(await countRegexOnValues(ctx, C, filters[4]!)).toBeUndefined();
    // The planner's read of every record, for a count, walks the values instead.
    const names = search('name', 'toolik');
    const parsed = store.counters.bodiesParsed;
    expect(await store.count(C, names, undefined, { access: { path: 'id-walk' } })).toBe(
      expectedCount(names),
    );
    expect(store.counters.bodiesParsed).toBe(parsed);
    // A write between two chunks: the count is started again and counts the records as they are now.
    const march = search('collection_date.has_raw_value', '-03-');
    const before = expectedCount(march);
    const counting = countRegexOnValues(ctx, C, march, { chunk: 5 });
    await store.upsertMany(C, [{ ...docs[1]!, collection_date: { has_raw_value: '2020-03-03' } }]);
    expect(await counting).toBe(before + 1);
    await store.upsertMany(C, [docs[1]!]);
    expect(await countRegexOnValues(ctx, C, march, { chunk: 5 })).toBe(before);
    // Writes between the chunks of every attempt: no count is given, the caller counts another way.
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing; i++) {
        await store.upsertMany(C, [{ ...docs[1]!, collection_date: { has_raw_value: `2020-03-${i % 10}` } }]);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    try {
      expect(await countRegexOnValues(ctx, C, march, { chunk: 5 })).toBeUndefined();
    } finally {
      writing = false;
      await writes;
      await store.upsertMany(C, [docs[1]!]);
    }
  });

  it('walks a path once for counts asked at once, and the others learn from it that it holds too many values', async () => {
    await withTemporaryStore(async (fresh) => {
      await fresh.upsertMany(C, docs);
      const ctx = (fresh as unknown as { context: StoreContext }).context;
      const get = ctx.statements.get.bind(ctx.statements);
      let walks = 0;
      ctx.statements.get = (sql: string) => {
        if (sql.includes('WITH RECURSIVE walk')) walks++;
        return get(sql);
      };
      // 960 distinct names against a limit of 50, read 10 at a time: 6 reads find that out.
      const limits = { values: 50, irregular: 1000 };
      const names = Array.from({ length: 8 }, (_, i) => search('name', `toolik ${i}`));
      const counts = await Promise.all(
        names.map((f) => countRegexOnValues(ctx, C, f, { limits, chunk: 10 })),
      );
      expect(counts).toEqual(Array(8).fill(undefined));
      expect(walks).toBe(6);
      // Counts on a path with few values wait for the first, then each counts, exactly.
      const dates = ['-03-', '-04-', '2016', '2003', 'zzz'].map((t) =>
        search('collection_date.has_raw_value', t),
      );
      const exact = await Promise.all(
        dates.map((f) =>
          countRegexOnValues(ctx, C, f, { limits: { values: 1000, irregular: 1000 }, chunk: 10 }),
        ),
      );
      expect(exact).toEqual(dates.map(expectedCount));
      expect(exact[0]).toBeGreaterThan(0);
    });
  });

  it("counts one value's entries in slices, in id order, leaving out the irregular records' entries", async () => {
    await withTemporaryStore(async (big) => {
      // Two values, each with more entries than a slice, and irregular records holding them too.
      const n = ENTRIES_SLICE + 123;
      const many: Doc[] = Array.from({ length: 2 * n }, (_, i) => ({
        id: `nmdc:bsm-12-${String(i).padStart(7, '0')}`,
        ecosystem_type: i % 2 === 0 ? 'Soil' : 'Sediment',
        ...(i % 1000 === 7 ? { ecosystem_type: ['Soil', 'Sand'] } : {}),
      }));
      await big.upsertMany(C, many);
      const ctx = (big as unknown as { context: StoreContext }).context;
      for (const filter of [
        { ecosystem_type: { $regex: 'S' } },
        { ecosystem_type: { $regex: '^So' } },
        { ecosystem_type: { $regex: 'a' } },
      ]) {
        const expected = many.filter(compileFilter(filter)).length;
        expect(await countRegexOnValues(ctx, C, filter), JSON.stringify(filter)).toBe(expected);
      }
    });
  });
});
