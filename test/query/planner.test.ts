import { describe, expect, it } from 'vitest';
import { conjunctsOf } from '../../search/filter-predicates.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import type { Candidates, IndexablePredicate, SearchIndex } from '../../search/port.ts';
import type { DocumentStore, FindOptions } from '../../src/store/port.ts';

const re = (path: string, pattern: string, flags = '') => ({
  kind: 'predicate',
  predicate: { kind: 'regex', path, pattern, flags },
});

describe('conjunctsOf', () => {
  it('takes $regex predicates from fields, implicit AND and $and', () => {
    expect(
      conjunctsOf({
        name: { $regex: 'soil', $options: 'i' },
        $and: [{ 'env_broad_scale.term.name': { $regex: 'biome' } }],
        depth: 3,
      }),
    ).toEqual([re('name', 'soil', 'i'), re('env_broad_scale.term.name', 'biome')]);
  });

  it('keeps an $or only when every branch is indexable', () => {
    expect(conjunctsOf({ $or: [{ name: { $regex: 'a1b' } }, { id: { $regex: 'c2d' } }] })).toEqual([
      { kind: 'or', branches: [[re('name', 'a1b')], [re('id', 'c2d')]] },
    ]);
    expect(conjunctsOf({ $or: [{ name: { $regex: 'a1b' } }, { ecosystem: 'Soil' }] })).toEqual([]);
  });

  it('never narrows through negation', () => {
    expect(conjunctsOf({ $nor: [{ name: { $regex: 'abc' } }], name: { $not: { $regex: 'xyz' } } })).toEqual(
      [],
    );
  });

  it('follows $elemMatch into nested paths', () => {
    expect(
      conjunctsOf({
        has_input: { $elemMatch: { $regex: '^nmdc:bsm' } },
        studies: { $elemMatch: { title: { $regex: 'forest' }, year: 2020 } },
      }),
    ).toEqual([re('has_input', '^nmdc:bsm'), re('studies.title', 'forest')]);
  });
});

/**
 * A store double of `size` records whose sample has `share` of its records named "xabcx" (the
 * rest "other"), recording what the planner asks of it.
 */
function recordingStore(size: number, share: number | null) {
  const finds: FindOptions[] = [];
  const counts: Array<Iterable<string> | undefined> = [];
  const store = {
    engine: 'sqlite',
    find: async (_c: string, _f: unknown, options: FindOptions = {}) => {
      finds.push(options);
      return [];
    },
    count: async (_c: string, filter: Record<string, unknown>, ids?: Iterable<string>) => {
      if (Object.keys(filter).length === 0) return size;
      counts.push(ids);
      return 0;
    },
    ...(share === null
      ? {}
      : {
          sampleTexts: async () =>
            Array.from({ length: 2000 }, (_, i) =>
              JSON.stringify({ id: `r${i}`, name: i < 2000 * share ? 'xabcx' : 'other' }),
            ),
        }),
    changesSince: async () => ({
      changes: [{ collection: 'biosample_set', id: 'fresh', deleted: false }],
      seq: 9,
    }),
    latestSeq: async () => 9,
  } as unknown as DocumentStore;
  return { store, finds, counts };
}

function fixedIndex(
  answers: Record<string, Candidates>,
  synchronous = true,
): SearchIndex & { asked: Array<{ predicate: IndexablePredicate; limit: number }> } {
  const asked: Array<{ predicate: IndexablePredicate; limit: number }> = [];
  return {
    engine: 'sqlite-fts5',
    synchronous,
    asked,
    candidates: async (_c: string, predicate: IndexablePredicate, limit: number) => {
      asked.push({ predicate, limit });
      return answers[(predicate as { pattern: string }).pattern] ?? { all: true };
    },
    watermark: async () => 0,
  } as unknown as SearchIndex & { asked: Array<{ predicate: IndexablePredicate; limit: number }> };
}

const ids = (...xs: string[]): Candidates => ({ all: false, ids: new Set(xs) });
const C = 'biosample_set';

describe('QueryPlanner', () => {
  it('plans a filter the attribute index decides from its entry counts, without drawing a first sample', async () => {
    const { store } = recordingStore(100_000, 0);
    let draws = 0;
    const sampleTexts = store.sampleTexts!.bind(store);
    Object.assign(store, {
      sampleTexts: async (collection: string, size: number) => {
        draws++;
        return sampleTexts(collection, size);
      },
      conditionEstimates: (_c: string, filter: Record<string, unknown>, sortPath?: string) => ({
        conditions: Object.keys(filter)
          .filter((k) => k === 'ecosystem_category')
          .map((k) => ({ condition: `${k} = ...`, entries: 5000, ordered: true })),
        exact: Object.keys(filter).every((k) => k === 'ecosystem_category'),
        cap: 5000,
        sortIndexed: sortPath === 'name',
      }),
    });
    const planner = new QueryPlanner(store, fixedIndex({}));
    const sorted = { sort: [['name', 1]] as Array<[string, 1 | -1]>, limit: 25 };
    const decided = await planner.planFind(C, { ecosystem_category: 'Terrestrial' }, sorted, 'page');
    expect(decided.estimate).toEqual({ source: 'none' });
    expect(decided.chosen.path).toBe('sorted-index-walk');
    expect(draws).toBe(0);
    // A filter the index does not decide draws it, and then every plan of the collection uses it.
    const searched = await planner.planFind(C, { name: { $regex: 'abc' } }, { limit: 25 }, 'page');
    expect(searched.estimate).toMatchObject({ source: 'sample', sampled: 2000 });
    expect(draws).toBe(1);
    const again = await planner.planFind(C, { ecosystem_category: 'Terrestrial' }, sorted, 'page');
    expect(again.estimate).toMatchObject({ source: 'sample' });
    expect(draws).toBe(1);
  });

  it('reads a page of an equality whose count reached the cap off the index, unsampled: its share is not known', async () => {
    const { store } = recordingStore(100_000, 0);
    Object.assign(store, {
      conditionEstimates: () => ({
        conditions: [{ condition: 'associated_studies = ...', entries: 5000, ordered: true }],
        exact: true,
        cap: 5000,
      }),
    });
    const planner = new QueryPlanner(store, fixedIndex({}));
    const plan = await planner.planFind(C, { associated_studies: 'nmdc:sty-11-aaaa' }, { limit: 11 }, 'page');
    expect(plan.estimate).toEqual({ source: 'none' });
    // At least 5,000 of 100,000 match: the index reads the page's 11 entries and records whatever
    // the share; a walk in id order would step over up to 220 records (it was costed at 11).
    expect(plan.chosen).toMatchObject({ path: 'attribute-index', docsExamined: 11, keysExamined: 11 });
    const walk = plan.rejected.find((p) => p.path === 'id-walk')!;
    expect(walk.docsExamined).toBe(220);
    expect(walk.cost).toBeGreaterThan(plan.chosen.cost);
  });

  it('reads the records an id list names by their keys, however many more than the capped counts', async () => {
    const { store } = recordingStore(100_000, 0);
    const estimates = (counted: boolean) => () => ({
      conditions: [
        { condition: 'id in [8000 values]', entries: 8000, ordered: true, ...(counted ? { counted } : {}) },
      ],
      exact: true,
      cap: 5000,
    });
    const planner = new QueryPlanner(store, fixedIndex({}));
    const filter = { id: { $in: Array.from({ length: 8000 }, (_, i) => `nmdc:bsm-11-${i}`) } };
    // Taken for a count that reached the cap, the 8,000 ids stood for every record: a walk of
    // all 100,000 checked each against the list.
    Object.assign(store, { conditionEstimates: estimates(false) });
    expect((await planner.planFind(C, filter, {}, 'page')).chosen.path).toBe('id-walk');
    Object.assign(store, { conditionEstimates: estimates(true) });
    const plan = await planner.planFind(C, filter, {}, 'page');
    expect(plan.chosen.path).toBe('attribute-index');
    expect(plan.chosen.keysExamined).toBe(8000);
  });

  it('reads the candidates of a predicate the sample finds rare, intersecting AND-ed predicates', async () => {
    const { store, finds } = recordingStore(100_000, 0);
    const index = fixedIndex({ abc: ids('a', 'b', 'c'), xyz: ids('b', 'c', 'd') });
    const planner = new QueryPlanner(store, index);
    const filter = { name: { $regex: 'abc' }, id: { $regex: 'xyz' } };
    const plan = await planner.planFind(C, filter, { limit: 5 }, 'page');
    expect(plan.chosen.path).toBe('candidate-ids');
    expect(plan.estimate).toMatchObject({ source: 'sample', hits: 0, sampled: 2000 });
    // The index is asked with the break-even count: past it, another path is cheaper.
    const limit = index.asked[0]!.limit;
    expect(limit).toBeGreaterThan(100);
    expect(limit).toBeLessThan(100_000);
    await planner.find(C, filter, { limit: 5 });
    expect(finds.at(-1)).toEqual({
      limit: 5,
      candidateIds: new Set(['b', 'c']),
      access: { path: 'candidate-ids' },
    });
  });

  it('walks in id order, testing the stored text first, for a predicate the sample finds common', async () => {
    const { store, finds } = recordingStore(100_000, 0.4);
    const index = fixedIndex({ abc: ids('a') });
    const planner = new QueryPlanner(store, index);
    const plan = await planner.planFind(C, { name: { $regex: 'abc' } }, { limit: 25 }, 'page');
    expect(plan.chosen).toMatchObject({ path: 'id-walk', applicable: true });
    // About 25 / 0.4 records read, not 40,000 candidates.
    expect(plan.chosen.docsExamined).toBeGreaterThanOrEqual(62);
    expect(plan.chosen.docsExamined).toBeLessThan(70);
    expect(plan.estimate).toMatchObject({ matches: 40_000, hits: 800 });
    const rejected = plan.rejected.find((p) => p.path === 'candidate-ids')!;
    expect(rejected.cost).toBeGreaterThan(plan.chosen.cost);
    expect(plan.summary).toMatch(/^biosample_set page 0\+25: id-walk .* body test ="abc"/);
    await planner.find(C, { name: { $regex: 'abc' } }, { limit: 25 });
    expect(index.asked).toEqual([]);
    expect(finds).toEqual([
      {
        limit: 25,
        // The share the sample found to pass goes with the test: the walk's first range is sized by it.
        access: { path: 'id-walk', bodyTest: { sql: 'x.body GLOB +?', params: ['*abc*'], pass: 0.4 } },
      },
    ]);
  });

  it('takes the next path when the index has more candidates than the break-even count, and remembers', async () => {
    const { store, finds } = recordingStore(100_000, 0);
    const index = fixedIndex({});
    const planner = new QueryPlanner(store, index);
    const plan = await planner.planFind(C, { name: { $regex: 'abc' } }, { limit: 25 }, 'page');
    expect(plan.chosen.path).toBe('id-walk');
    expect(plan.indexGaveUpAbove).toBe(index.asked[0]!.limit);
    expect(plan.rejected.find((p) => p.path === 'candidate-ids')).toMatchObject({ applicable: false });
    await planner.find(C, { name: { $regex: 'abc' } }, { limit: 25 });
    expect(index.asked).toHaveLength(1);
    expect(finds[0]!.access!.path).toBe('id-walk');
  });

  it('unions the branches of an indexable $or', async () => {
    const { store } = recordingStore(100_000, 0);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a'), xyz: ids('z') }));
    const plan = await planner.plan(C, { $or: [{ name: { $regex: 'abc' } }, { name: { $regex: 'xyz' } }] });
    expect(plan.candidates).toEqual(new Set(['a', 'z']));
  });

  it('adds records written since the index watermark when the index is not written synchronously', async () => {
    const { store } = recordingStore(100_000, 0);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a') }, false));
    expect((await planner.plan(C, { name: { $regex: 'abc' } })).candidates).toEqual(new Set(['a', 'fresh']));
  });

  it('without a sample, asks the index with a limit of 20% of the collection, capped', async () => {
    const limits: number[] = [];
    const index = {
      ...fixedIndex({}),
      candidates: async (_c: string, _p: IndexablePredicate, limit: number) => {
        limits.push(limit);
        return { all: true } as Candidates;
      },
    } as unknown as SearchIndex;
    await new QueryPlanner(recordingStore(1000, null).store, index).plan(C, { name: { $regex: 'abc' } });
    await new QueryPlanner(recordingStore(10_000_000, null).store, index).plan(C, {
      name: { $regex: 'abc' },
    });
    expect(limits).toEqual([200, 50_000]);
  });

  it('counts through the candidates when they are cheaper than reading every record', async () => {
    const { store, counts } = recordingStore(100_000, 0);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a', 'b') }));
    await planner.count(C, { name: { $regex: 'abc' } });
    expect(counts).toEqual([new Set(['a', 'b'])]);
  });

  it('refuses patterns longer than 1,000 characters anywhere in the filter with a 422', async () => {
    const { store } = recordingStore(1000, 0);
    const planner = new QueryPlanner(store, fixedIndex({}));
    await expect(planner.find(C, { $nor: [{ name: { $regex: 'x'.repeat(1001) } }] })).rejects.toMatchObject({
      detail: '$regex pattern is 1001 characters long; the longest accepted is 1000',
    });
  });
});
