import { describe, expect, it } from 'vitest';
import { conjunctsOf } from '../../search/filter-predicates.ts';
import { QueryPlanner } from '../../search/planner.ts';
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

/** A store double recording what the planner asks of it. */
function recordingStore(size: number) {
  const finds: FindOptions[] = [];
  const counts: Array<Iterable<string> | undefined> = [];
  const store = {
    find: async (_c: string, _f: unknown, options: FindOptions = {}) => {
      finds.push(options);
      return [];
    },
    count: async (_c: string, filter: Record<string, unknown>, ids?: Iterable<string>) => {
      if (Object.keys(filter).length === 0) return size;
      counts.push(ids);
      return 0;
    },
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
): SearchIndex & { asked: IndexablePredicate[] } {
  const asked: IndexablePredicate[] = [];
  return {
    engine: 'sqlite-fts5',
    synchronous,
    asked,
    candidates: async (_c: string, p: IndexablePredicate) => {
      asked.push(p);
      return answers[(p as { pattern: string }).pattern] ?? { all: true };
    },
    watermark: async () => 0,
  } as unknown as SearchIndex & { asked: IndexablePredicate[] };
}

const ids = (...xs: string[]): Candidates => ({ all: false, ids: new Set(xs) });

describe('QueryPlanner', () => {
  it('intersects the candidates of AND-ed predicates and passes them to the store with the whole filter', async () => {
    const { store, finds } = recordingStore(1000);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a', 'b', 'c'), xyz: ids('b', 'c', 'd') }));
    await planner.find('biosample_set', { name: { $regex: 'abc' }, id: { $regex: 'xyz' } }, { limit: 5 });
    expect(finds).toEqual([{ limit: 5, candidateIds: new Set(['b', 'c']) }]);
  });

  it('unions the branches of an indexable $or', async () => {
    const { store } = recordingStore(1000);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a'), xyz: ids('z') }));
    const plan = await planner.plan('biosample_set', {
      $or: [{ name: { $regex: 'abc' } }, { name: { $regex: 'xyz' } }],
    });
    expect(plan.candidates).toEqual(new Set(['a', 'z']));
  });

  it('scans when the index cannot narrow', async () => {
    const { store, finds, counts } = recordingStore(1000);
    const planner = new QueryPlanner(store, fixedIndex({}));
    await planner.find('biosample_set', { name: { $regex: 'a.b' } });
    await planner.count('biosample_set', { name: { $regex: 'a.b' } });
    expect(finds).toEqual([{}]);
    expect(counts).toEqual([undefined]);
  });

  it('asks the index with a limit of 20% of the collection, capped', async () => {
    const { store } = recordingStore(1000);
    const limits: number[] = [];
    const index = {
      ...fixedIndex({}),
      candidates: async (_c: string, _p: IndexablePredicate, limit: number) => {
        limits.push(limit);
        return { all: true } as Candidates;
      },
    } as unknown as SearchIndex;
    await new QueryPlanner(store, index).plan('biosample_set', { name: { $regex: 'abc' } });
    await new QueryPlanner(recordingStore(10_000_000).store, index).plan('biosample_set', {
      name: { $regex: 'abc' },
    });
    expect(limits).toEqual([200, 50_000]);
  });

  it('adds records written since the index watermark when the index is not written synchronously', async () => {
    const { store } = recordingStore(1000);
    const planner = new QueryPlanner(store, fixedIndex({ abc: ids('a') }, false));
    expect((await planner.plan('biosample_set', { name: { $regex: 'abc' } })).candidates).toEqual(
      new Set(['a', 'fresh']),
    );
  });

  it('does not ask the index again, for a few seconds, about a predicate it could not narrow', async () => {
    const { store } = recordingStore(1000);
    const index = fixedIndex({ abc: ids('a') });
    const planner = new QueryPlanner(store, index);
    await planner.count('biosample_set', { name: { $regex: 'a.b' } });
    await planner.find('biosample_set', { name: { $regex: 'a.b' } });
    await planner.find('biosample_set', { name: { $regex: 'abc' } });
    await planner.find('biosample_set', { name: { $regex: 'abc' } });
    expect(index.asked.map((p) => (p as { pattern: string }).pattern)).toEqual(['a.b', 'abc', 'abc']);
  });

  it('refuses patterns longer than 1,000 characters anywhere in the filter with a 422', async () => {
    const { store } = recordingStore(1000);
    const planner = new QueryPlanner(store, fixedIndex({}));
    await expect(
      planner.find('biosample_set', { $nor: [{ name: { $regex: 'x'.repeat(1001) } }] }),
    ).rejects.toMatchObject({
      status: 422,
      detail: '$regex pattern is 1001 characters long; the longest accepted is 1000',
    });
  });
});

describe('RecordWriter', () => {
  it('refuses over-long patterns in a delete filter before touching the store', async () => {
    const { RecordWriter } = await import('../../search/writer.ts');
    let deleted = false;
    const store = { deleteMany: async () => ((deleted = true), []) } as unknown as DocumentStore;
    const writer = new RecordWriter(store, fixedIndex({}));
    await expect(
      writer.delete('biosample_set', { name: { $regex: 'y'.repeat(1500) } }),
    ).rejects.toMatchObject({ status: 422 });
    expect(deleted).toBe(false);
  });
});
