/**
 * The page strategies of the embedded store: `find` records which one served it
 * (`counters.lastStrategy`), and each one, called directly through `findWith`, answers the same
 * page as the reference (filter and sort over every record) or says it cannot answer (undefined).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from 'better-sqlite3';
import { compileFilter } from '../../src/store/filter.ts';
import { sortDocs, sortKeyOf } from '../../src/store/ordering.ts';
import type { Doc, ExecutionStats, Filter, FindOptions } from '../../src/store/port.ts';
import { SqliteDocumentStore, type PageStrategy } from '../../src/store/sqlite/index.ts';
import { RecordText } from '../../src/json-text.ts';

const C = 'biosample_set';
const CATEGORIES = ['Terrestrial', 'Aquatic', 'Plants'];
const TYPES = ['Soil', 'Marine', 'Freshwater', 'Leaf', 'Root'];
// Enough records that an index walk beats reading keys (a condition must match 1,000 or more).
const docs: Doc[] = Array.from({ length: 3000 }, (_, i) => ({
  id: `nmdc:bsm-11-${String(i).padStart(5, '0')}`,
  type: 'nmdc:Biosample',
  name: `sample ${(i * 7919) % 3000}`,
  geo_loc_name: { has_raw_value: `site ${(i * 7907) % 3000}` },
  ecosystem_category: CATEGORIES[i % 3],
  ecosystem_type: TYPES[i % 5],
  ...(i % 50 === 0 ? {} : { depth: { has_numeric_value: i % 97 } }),
}));

function reference(filter: Filter, options: FindOptions): Doc[] {
  const predicate = compileFilter(filter);
  const candidates = options.candidateIds ? new Set(options.candidateIds) : undefined;
  const matches = docs.filter((d) => predicate(d) && (!candidates || candidates.has(d.id)));
  const sorted = sortDocs(matches, options.sort?.length ? options.sort : [['id', 1]]);
  const skip = options.skip ?? 0;
  return sorted.slice(skip, options.limit ? skip + options.limit : undefined);
}

const ALL: PageStrategy[] = [
  'id-walk',
  'candidate-ids',
  'attribute-index',
  'sorted-index-walk',
  'sort-keys',
  'sort-in-memory',
];
const everyThird = docs.filter((_, i) => i % 3 === 0).map((d) => d.id);
const everyFifth = docs.filter((_, i) => i % 5 === 0).map((d) => d.id);
/** Filters the attribute index decides (the whole collection, exact conditions)... */
const decided: Filter[] = [{}, { ecosystem_category: 'Plants' }, { 'depth.has_numeric_value': { $gt: 90 } }];
/** ...and filters it does not: each candidate is parsed and tested. */
const tested: Filter[] = [{ ecosystem_category: 'Plants', name: { $regex: '7$' } }];
/** ...and filters the strings read off the stored texts decide: nothing is parsed for them. */
const readOff: Filter[] = [{ name: { $regex: '^sample 2' } }];

/** A find, the strategy the store chooses for it, and every strategy that can answer it. */
const CASES: Array<{
  name: string;
  filter: Filter;
  options: FindOptions;
  chosen: PageStrategy;
  able: PageStrategy[];
}> = [
  {
    name: 'a page of the whole collection in id order',
    filter: {},
    options: { skip: 40, limit: 10 },
    chosen: 'id-walk',
    able: ['id-walk', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'an indexed equality in id order',
    filter: { ecosystem_type: 'Marine' },
    options: { limit: 15 },
    chosen: 'attribute-index',
    able: ['id-walk', 'attribute-index', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: "the search index's candidates in id order",
    filter: { ecosystem_category: 'Terrestrial' },
    options: { candidateIds: everyThird, limit: 12, skip: 3 },
    chosen: 'candidate-ids',
    able: ['candidate-ids', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'a page sorted by an indexed path',
    filter: {},
    options: { sort: [['depth.has_numeric_value', -1]], skip: 20, limit: 10 },
    chosen: 'sorted-index-walk',
    able: ['id-walk', 'sorted-index-walk', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'an index-decided filter sorted by a path without an index',
    filter: { ecosystem_category: 'Plants' },
    options: { sort: [['geo_loc_name.has_raw_value', 1]], limit: 10 },
    chosen: 'sort-keys',
    able: ['id-walk', 'attribute-index', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'a filter the index cannot decide, sorted by a path without an index',
    filter: { name: { $regex: '7$' } },
    options: { sort: [['geo_loc_name.has_raw_value', -1]], limit: 10 },
    chosen: 'sort-in-memory',
    able: ['id-walk', 'sort-in-memory'],
  },
  {
    name: 'an index-decided filter sorted by an indexed path, deep',
    filter: { ecosystem_category: 'Plants' },
    options: { sort: [['name', 1]], skip: 700, limit: 10 },
    chosen: 'sorted-index-walk',
    able: ['id-walk', 'attribute-index', 'sorted-index-walk', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'the whole collection sorted by an indexed path descending, deep',
    filter: {},
    options: { sort: [['name', -1]], skip: 2500, limit: 25 },
    chosen: 'sorted-index-walk',
    able: ['id-walk', 'sorted-index-walk', 'sort-keys', 'sort-in-memory'],
  },
  {
    name: 'a filter the index cannot decide, sorted by an indexed path',
    filter: { name: { $regex: '7$' } },
    options: { sort: [['name', -1]], skip: 5, limit: 10 },
    chosen: 'sorted-index-walk',
    able: ['id-walk', 'sorted-index-walk', 'sort-in-memory'],
  },
];

describe('SQLite page strategies', () => {
  let dir: string;
  let store: SqliteDocumentStore;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-strategies-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    await store.upsertMany(C, docs);
  });

  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const c of CASES) {
    it(`serves ${c.name} by ${c.chosen} and records it`, async () => {
      const expected = reference(c.filter, c.options);
      expect(expected.length).toBeGreaterThan(0);
      expect(await store.find(C, c.filter, c.options)).toEqual(expected);
      expect(store.counters.lastStrategy).toBe(c.chosen);
    });

    it(`answers ${c.name} alike by every strategy that can, and undefined by the others`, async () => {
      const expected = reference(c.filter, c.options);
      for (const strategy of ALL) {
        const page = await store.findWith(strategy, C, c.filter, c.options);
        if (c.able.includes(strategy)) expect(page, strategy).toEqual(expected);
        else expect(page, strategy).toBeUndefined();
      }
    });
  }

  it('starts a sorted page after the keys of the record before it, as skipping to it would', async () => {
    for (const c of CASES.filter((x) => x.options.sort)) {
      const sort = [...c.options.sort!, ['id', 1]] as Array<[string, 1 | -1]>;
      const all = reference(c.filter, { sort });
      for (const skip of [1, 13, Math.floor(all.length / 2), all.length - 3]) {
        const before = all[skip - 1]!;
        const after = sort.map(([p, d]) => sortKeyOf(before, p, d));
        const options = { ...c.options, skip, limit: 7, after };
        const expected = all.slice(skip, skip + 7);
        expect(await store.find(C, c.filter, options), `${c.name} after ${skip}`).toEqual(expected);
        for (const strategy of c.able)
          expect(
            await store.findWith(strategy, C, c.filter, options),
            `${strategy} ${c.name} after ${skip}`,
          ).toEqual(expected);
      }
    }
  });

  it('seeks with the sorted index walk: the keys alone place its page, without reading what is before it', async () => {
    const sort: Array<[string, 1 | -1]> = [
      ['name', -1],
      ['id', 1],
    ];
    const all = reference({}, { sort });
    const before = all[2000]!;
    const after = sort.map(([p, d]) => sortKeyOf(before, p, d));
    store.counters.bodiesParsed = 0;
    // `skip` left at 0: a walk that skipped instead of seeking would answer the first page.
    const page = await store.findWith('sorted-index-walk', C, {}, { sort, skip: 0, limit: 5, after });
    expect(page).toEqual(all.slice(2001, 2006));
    expect(store.counters.bodiesParsed).toBe(5);
  });

  it('applies the projection whichever strategy reads the page', async () => {
    const options: FindOptions = {
      sort: [['geo_loc_name.has_raw_value', 1]],
      limit: 3,
      projection: ['name'],
    };
    const expected = reference({ ecosystem_category: 'Plants' }, options).map((d) => ({
      id: d.id,
      name: d.name,
    }));
    for (const strategy of ['sort-keys', 'sort-in-memory'] as const)
      expect(await store.findWith(strategy, C, { ecosystem_category: 'Plants' }, options)).toEqual(expected);
  });

  it('reads a driving $in value by value, merged in id order, each record once, as a walk of every record', async () => {
    // Records holding one or two of the values (an array), ids SQLite and JavaScript order alike
    // and otherwise (U+E000 and a surrogate pair sort differently by code point and by UTF-16 unit).
    const C2 = 'data_generation_set';
    const values = ['in-a', 'in-b', 'in-c', 'in-d'];
    const idOf = (i: number) =>
      i % 7 === 0
        ? `nmdc:dgns-11-\ue000${i}`
        : i % 11 === 0
          ? `nmdc:dgns-11-\u{1F600}${i}`
          : `nmdc:dgns-11-${String(i).padStart(4, '0')}`;
    const records: Doc[] = Array.from({ length: 1500 }, (_, i) => ({
      id: idOf(i),
      has_input: i % 4 === 0 ? [values[i % 3]!, values[(i + 1) % 3]!] : [values[i % 4]!],
    }));
    await store.upsertMany(C2, records);
    for (const $in of [['in-a', 'in-b'], ['in-b', 'in-c', 'in-d'], ['in-d'], ['in-a', 'none']])
      for (const options of [
        { limit: 25 },
        { skip: 300, limit: 40 },
        { afterId: idOf(700), limit: 30 },
        {},
      ] as FindOptions[]) {
        const filter = { has_input: { $in } };
        const label = JSON.stringify({ $in, options });
        const walked = await store.findWith('id-walk', C2, filter, options);
        if (!options.skip) expect(walked!.length, label).toBeGreaterThan(0);
        expect(await store.findWith('attribute-index', C2, filter, options), label).toEqual(walked);
        const ids = await store.findWith('attribute-index', C2, filter, { ...options, projection: ['id'] });
        expect(ids, label).toEqual(walked!.map((d) => ({ id: d.id })));
      }
    await store.deleteMany(C2, {});
  });

  it('answers a page of ids alone without parsing a record where the candidates decide, and as the reference', async () => {
    // Ids by themselves where the index decides; the tested filters parse each record as usual.
    for (const filter of [...decided, ...tested, ...readOff])
      for (const options of [
        { limit: 25 },
        { skip: 40, limit: 10 },
        { afterId: docs[1500]!.id, limit: 7 },
        { limit: 1200 },
        {},
      ] as FindOptions[])
        for (const projection of [['id'], ['_id'], ['id', '_id']]) {
          const label = JSON.stringify({ filter, options, projection });
          const expected = reference(filter, {})
            .filter((d) => !options.afterId || d.id > options.afterId)
            .slice(options.skip ?? 0, options.limit ? (options.skip ?? 0) + options.limit : undefined)
            .map((d) => ({ id: d.id }));
          store.counters.bodiesParsed = 0;
          expect(await store.find(C, filter, { ...options, projection }), label).toEqual(expected);
          if (decided.includes(filter)) expect(store.counters.bodiesParsed, label).toBe(0);
          else expect(store.counters.bodiesParsed, label).toBeGreaterThan(0);
          for (const strategy of ['id-walk', 'attribute-index'] as const) {
            const page = await store.findWith(strategy, C, filter, { ...options, projection });
            if (page !== undefined) expect(page, `${strategy} ${label}`).toEqual(expected);
          }
        }
    // Any other field, or a sorted page, still reads the records.
    store.counters.bodiesParsed = 0;
    expect(await store.find(C, {}, { limit: 3, projection: ['id', 'name'] })).toEqual(
      reference({}, { limit: 3 }).map((d) => ({ id: d.id, name: d.name })),
    );
    expect(store.counters.bodiesParsed).toBeGreaterThan(0);
  });

  it('reads a page of a filter the candidates decide and the record after it, no more', async () => {
    // The rows of the statements that read records (bodies) or candidate ids.
    const statement = Object.getPrototypeOf(
      (store as unknown as { db: Database }).db.prepare('SELECT 1'),
    ) as {
      all: (...params: unknown[]) => unknown[];
    };
    const spy = vi.spyOn(statement, 'all');
    try {
      for (const [filter, options] of [
        [{}, { limit: 26 }],
        [{}, { afterId: docs[1500]!.id, limit: 26 }],
        [{}, { skip: 10, limit: 5 }],
        [{ ecosystem_category: 'Aquatic' }, { limit: 26 }],
        [{ ecosystem_category: 'Aquatic' }, { limit: 26, projection: ['id'] }],
        [{}, { limit: 40 }],
      ] as Array<[Filter, FindOptions]>) {
        const label = JSON.stringify({ filter, options });
        const access = {
          path: Object.keys(filter).length === 0 ? ('id-walk' as const) : ('attribute-index' as const),
        };
        spy.mockClear();
        const page = await store.find(C, filter, { ...options, asText: true, access });
        const expected = reference(filter, {})
          .filter((d) => !options.afterId || d.id > options.afterId)
          .slice(options.skip ?? 0, (options.skip ?? 0) + options.limit!)
          .map((d) => (options.projection ? { id: d.id } : d));
        const answered = page.map((r) => (r instanceof RecordText ? JSON.parse(r.text) : r));
        expect(answered, label).toEqual(expected);
        const rows = (kind: (row: unknown) => boolean) =>
          spy.mock.results
            .map((r) => r.value as unknown[])
            .filter((v) => Array.isArray(v) && v.length > 0 && kind(v[0]))
            .reduce((n, v) => n + v.length, 0);
        const need = (options.skip ?? 0) + options.limit!;
        // Every record read is a match: the statements read skip + limit rows, not a chunk of 32.
        expect(
          rows((row) => typeof row === 'object' && row !== null && 'body' in row),
          label,
        ).toBe(options.projection ? 0 : need);
        if (Object.keys(filter).length > 0)
          expect(
            rows((row) => typeof row === 'string'),
            label,
          ).toBe(need);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('hands out a page in id order as the stored texts when asked, parsing only what a filter tests', async () => {
    for (const filter of [...decided, ...tested, ...readOff])
      for (const options of [
        { limit: 25 },
        { skip: 40, limit: 10 },
        { afterId: docs[1500]!.id, limit: 7 },
        { candidateIds: everyFifth, limit: 30 },
        { limit: 1200 },
      ] as FindOptions[]) {
        const label = JSON.stringify({
          filter,
          options: { ...options, candidateIds: options.candidateIds ? 'every fifth' : undefined },
        });
        const expected = reference(filter, {})
          .filter((d) => !options.afterId || d.id > options.afterId)
          .filter((d) => !options.candidateIds || everyFifth.includes(d.id))
          .slice(options.skip ?? 0, options.limit ? (options.skip ?? 0) + options.limit : undefined);
        // (Every case but one has records: no record is a Plants one among every fifth ending in 7.)
        if (!(options.candidateIds && Object.keys(filter).length === 2))
          expect(expected.length, label).toBeGreaterThan(0);
        const asText = { ...options, asText: true };
        store.counters.bodiesParsed = 0;
        await store.find(C, filter, options);
        const parsedAsEver = store.counters.bodiesParsed;
        store.counters.bodiesParsed = 0;
        const page = await store.find(C, filter, asText);
        expect(storedTexts(page), label).toEqual(await textsOf(expected));
        // Nothing parsed where the index or the texts decide; otherwise what the filter's test
        // parses as ever.
        const parsed = store.counters.bodiesParsed;
        if (decided.includes(filter) && !options.candidateIds) expect(parsed, label).toBe(0);
        else if (readOff.includes(filter)) {
          expect(parsed, label).toBe(0);
          expect(parsedAsEver, label).toBeGreaterThan(0);
        } else if (tested.includes(filter)) expect(parsed, label).toBe(parsedAsEver);
        else expect([0, parsedAsEver], label).toContain(parsed);
        for (const strategy of ['id-walk', 'attribute-index', 'candidate-ids'] as const) {
          const other = await store.findWith(strategy, C, filter, asText);
          if (other !== undefined)
            expect(storedTexts(other), `${strategy} ${label}`).toEqual(await textsOf(expected));
        }
      }
    // Sorted pages: the strategies that read only the page's bodies hand them out as read.
    for (const c of CASES.filter((x) => x.options.sort)) {
      const asText = { ...c.options, asText: true };
      for (const strategy of c.able) {
        const page = (await store.findWith(strategy, C, c.filter, asText))!;
        expect(page.map(parsedRecord), `${strategy} ${c.name}`).toEqual(reference(c.filter, c.options));
        const texts = page.filter((r) => r instanceof RecordText).length;
        if (strategy === 'sort-keys') expect(texts, c.name).toBe(page.length);
        if (strategy === 'sort-in-memory' || strategy === 'id-walk') expect(texts, c.name).toBe(0);
        if (strategy === 'sorted-index-walk' && c.filter.name === undefined)
          expect(texts, `${strategy} ${c.name}`).toBe(page.length);
      }
    }
    // Projected pages come parsed.
    expect(
      await store.find(C, { ecosystem_category: 'Plants' }, { limit: 2, projection: ['name'], asText: true }),
    ).toEqual(
      reference({ ecosystem_category: 'Plants' }, { limit: 2 }).map((d) => ({ id: d.id, name: d.name })),
    );
    // Unasked, records are parsed as ever.
    expect(await store.find(C, {}, { limit: 2 })).toEqual(reference({}, { limit: 2 }));
  });

  /** A record of a page, parsed when it came as its stored text. */
  function parsedRecord(record: Doc): Doc {
    return record instanceof RecordText ? (JSON.parse(record.text) as Doc) : record;
  }

  /** The page's records as their ids and texts; each must be a RecordText of its own id. */
  function storedTexts(page: Doc[]): Array<{ id: string; text: string }> {
    return page.map((record) => {
      expect(record).toBeInstanceOf(RecordText);
      const { id, text } = record as unknown as RecordText;
      expect((JSON.parse(text) as Doc).id).toBe(id);
      return { id, text };
    });
  }

  /** The stored texts of these records, read by id. */
  async function textsOf(records: Doc[]): Promise<Array<{ id: string; text: string }>> {
    return Promise.all(records.map(async ({ id }) => ({ id, text: (await store.getTextById(C, id))! })));
  }
});

describe('the id walk with a body test', () => {
  let dir: string;
  let store: SqliteDocumentStore;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-body-test-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    await store.upsertMany(C, docs);
  });

  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cases: Array<{ filter: Filter; bodyTest: { sql: string; params: string[] } }> = [
    // Broad: the page ends in the first range.
    {
      filter: { name: { $regex: 'sample 1' } },
      bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%sample 1%'] },
    },
    // Rare: the walk crosses every range (256, 512, ... rows) before it has its matches.
    {
      filter: { name: { $regex: '^sample 2999$' } },
      bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%sample 2999%'] },
    },
    // A test that passes records the filter then refuses.
    {
      filter: { name: { $regex: 'e 7$' } },
      bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%e 7%'] },
    },
  ];

  it('answers the same pages, counts and sorted pages as the reference, counting what it read', async () => {
    for (const { filter, bodyTest } of cases) {
      const access = { path: 'id-walk' as const, bodyTest };
      for (const options of [
        { limit: 5 },
        { skip: 3, limit: 40 },
        {},
        { afterId: docs[1500]!.id, limit: 7 },
      ]) {
        const expected = reference(filter, {}).filter((d) => !options.afterId || d.id > options.afterId);
        const skip = (options as FindOptions).skip ?? 0;
        const limit = (options as FindOptions).limit;
        const stats: ExecutionStats = { docsExamined: 0, keysExamined: 0, docsParsed: 0 };
        const page = await store.find(C, filter, { ...options, access, stats });
        expect(page, JSON.stringify({ filter, options })).toEqual(
          expected.slice(skip, limit ? skip + limit : undefined),
        );
        expect(stats.path).toBe('id-walk');
        // Parsed only what passed the test; examined at least every record up to the last match.
        expect(stats.docsParsed).toBeLessThanOrEqual(stats.docsExamined);
        if (page.length > 0) {
          const upTo = docs.findIndex((d) => d.id === page[page.length - 1]!.id);
          const from = options.afterId ? docs.findIndex((d) => d.id === options.afterId) + 1 : 0;
          expect(stats.docsExamined).toBeGreaterThanOrEqual(upTo - from + 1);
        }
      }
      // As stored texts: the same records, each parsed once for the filter's test.
      const texts = await store.find(C, filter, { limit: 9, access, asText: true });
      expect(texts.every((r) => r instanceof RecordText)).toBe(true);
      expect(texts.map((r) => JSON.parse((r as unknown as RecordText).text))).toEqual(
        reference(filter, { limit: 9 }),
      );
      expect(await store.count(C, filter, undefined, { access })).toBe(reference(filter, {}).length);
      const sorted = { sort: [['name', -1]] as Array<[string, 1 | -1]>, limit: 4 };
      expect(await store.find(C, filter, { ...sorted, access })).toEqual(reference(filter, sorted));
    }
  });

  it('tests no more records than the page needs when it ends past the first range', async () => {
    // A third of the records match, so a page of 100 ends near the 300th record, in the second
    // range (256 records, then 512); the test also passes names the filter refuses ("sample 1").
    const filter = { name: { $regex: '^sample 1[0-9]{3}$' } };
    const access = {
      path: 'id-walk' as const,
      bodyTest: { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%sample 1%'] },
    };
    for (const options of [{ limit: 100 }, { skip: 90, limit: 10 }, { limit: 400 }]) {
      const stats: ExecutionStats = { docsExamined: 0, keysExamined: 0, docsParsed: 0 };
      const page = await store.find(C, filter, { ...options, access, stats });
      expect(page).toEqual(reference(filter, options));
      const upTo = docs.findIndex((d) => d.id === page[page.length - 1]!.id) + 1;
      expect(upTo).toBeGreaterThan(256);
      // Read ahead: a few dozen records past the page's last at most, not up to a chunk's worth of matches.
      expect(stats.docsExamined, JSON.stringify(options)).toBeGreaterThanOrEqual(upTo);
      expect(stats.docsExamined, JSON.stringify(options)).toBeLessThanOrEqual(upTo + 64);
    }
  });
});
