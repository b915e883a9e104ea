/**
 * The SearchIndex port's behaviour, written once and run against every adapter that can run:
 * FTS5 always, Elasticsearch when ELASTICSEARCH_URL is set.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import type { Candidates, SearchIndex } from '../../search/port.ts';
import { fingerprintOf } from '../../search/indexed-values.ts';

export interface IndexUnderTest {
  index: SearchIndex;
  /** Makes writes visible to searches (Elasticsearch refresh); a no-op for FTS5. */
  settle(): Promise<void>;
  dispose(): Promise<void>;
}

const C = 'biosample_set';

const records: Doc[] = [
  {
    id: 'nmdc:bsm-11-000001',
    name: 'Soil core from Harvard Forest',
    env_broad_scale: { term: { id: 'ENVO:00000446', name: 'terrestrial biome' } },
    alternative_identifiers: ['gold:Gb0115231', 'img:3300039974'],
  },
  {
    id: 'nmdc:bsm-11-000002',
    name: 'Sediment sample, Columbia River',
    env_broad_scale: { term: { id: 'ENVO:01000253', name: 'freshwater river biome' } },
    alternative_identifiers: ['gold:Gb0125000'],
  },
  {
    id: 'nmdc:bsm-11-000003',
    name: 'Rhizosphere SOIL near poplar',
    env_broad_scale: { term: { id: 'ENVO:00000446', name: 'terrestrial biome' } },
    description: 'soil adjacent to roots',
  },
];

const ids = (c: Candidates) => {
  if (c.all) throw new Error('expected candidate ids, got ALL');
  return [...c.ids].sort();
};

export function describeSearchIndex(name: string, make: () => Promise<IndexUnderTest>): void {
  describe(`SearchIndex behaviour: ${name}`, () => {
    let t: IndexUnderTest;
    beforeEach(async () => {
      t = await make();
      await t.index.clear(C);
      await t.index.index(C, records);
      await t.settle();
    });
    afterEach(async () => {
      await t.dispose();
    });

    it('finds the records whose value at the path contains a literal', async () => {
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'Forest', flags: '' }, 100)),
      ).toEqual(['nmdc:bsm-11-000001']);
    });

    it('answers case-insensitive patterns and text searches', async () => {
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'soil', flags: 'i' }, 100)),
      ).toEqual(['nmdc:bsm-11-000001', 'nmdc:bsm-11-000003']);
      expect(
        ids(await t.index.candidates(C, { kind: 'search', path: 'name', text: 'columbia r' }, 100)),
      ).toEqual(['nmdc:bsm-11-000002']);
    });

    it('restricts matches to the predicate path', async () => {
      // "soil" also occurs in `description` of record 3, which a `name` predicate must not need.
      const c = await t.index.candidates(
        C,
        { kind: 'regex', path: 'description', pattern: 'roots', flags: '' },
        100,
      );
      expect(ids(c)).toEqual(['nmdc:bsm-11-000003']);
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'roots', flags: '' }, 100)),
      ).toEqual([]);
    });

    it('searches strings nested under a path and inside arrays', async () => {
      expect(
        ids(
          await t.index.candidates(
            C,
            { kind: 'regex', path: 'env_broad_scale.term.name', pattern: 'river', flags: '' },
            100,
          ),
        ),
      ).toEqual(['nmdc:bsm-11-000002']);
      expect(
        ids(
          await t.index.candidates(
            C,
            { kind: 'regex', path: 'env_broad_scale', pattern: 'terrestrial', flags: '' },
            100,
          ),
        ),
      ).toEqual(['nmdc:bsm-11-000001', 'nmdc:bsm-11-000003']);
      expect(
        ids(
          await t.index.candidates(
            C,
            { kind: 'regex', path: 'alternative_identifiers', pattern: '^img:', flags: '' },
            100,
          ),
        ),
      ).toEqual(['nmdc:bsm-11-000001']);
    });

    it('returns a superset for anchored patterns and alternations', async () => {
      const c = ids(
        await t.index.candidates(
          C,
          { kind: 'regex', path: 'name', pattern: '^(Soil|Sediment) ', flags: '' },
          100,
        ),
      );
      expect(c).toEqual(expect.arrayContaining(['nmdc:bsm-11-000001', 'nmdc:bsm-11-000002']));
    });

    it('cannot narrow patterns without a usable literal', async () => {
      expect(
        await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: '.*', flags: '' }, 100),
      ).toEqual({ all: true });
      // Too short for trigrams; an index that can say it (Elasticsearch) may narrow, to a superset.
      const short = await t.index.candidates(C, { kind: 'search', path: 'name', text: 'so' }, 100);
      if (!short.all)
        expect(ids(short)).toEqual(expect.arrayContaining(['nmdc:bsm-11-000001', 'nmdc:bsm-11-000003']));
    });

    it('gives up with ALL when there are more candidates than the limit', async () => {
      expect(
        await t.index.candidates(C, { kind: 'regex', path: 'id', pattern: 'nmdc:bsm', flags: '' }, 2),
      ).toEqual({ all: true });
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'id', pattern: 'nmdc:bsm', flags: '' }, 3)),
      ).toHaveLength(3);
    });

    it('answers word predicates', async () => {
      expect(
        ids(await t.index.candidates(C, { kind: 'words', path: 'name', text: 'SOIL core' }, 100)),
      ).toEqual(['nmdc:bsm-11-000001']);
    });

    it('forgets removed records and the old values of updated ones', async () => {
      await t.index.remove(C, ['nmdc:bsm-11-000001']);
      await t.index.index(C, [{ ...records[1]!, name: 'Renamed sample' }]);
      await t.settle();
      expect(
        ids(
          await t.index.candidates(
            C,
            { kind: 'regex', path: 'name', pattern: 'forest|sediment', flags: 'i' },
            100,
          ),
        ),
      ).toEqual([]);
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'Renamed', flags: '' }, 100)),
      ).toEqual(['nmdc:bsm-11-000002']);
    });

    it('is idempotent when the same records are indexed again', async () => {
      await t.index.index(C, records);
      await t.settle();
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'soil', flags: 'i' }, 100)),
      ).toHaveLength(2);
    });

    it('lists every indexed record with its content fingerprint', async () => {
      const all: Array<{ id: string; fingerprint: string }> = [];
      for await (const batch of t.index.fingerprints(C)) all.push(...batch);
      all.sort((a, b) => (a.id < b.id ? -1 : 1));
      expect(all).toEqual(records.map((r) => ({ id: r.id, fingerprint: fingerprintOf(r) })));
    });

    it('keeps collections apart and clears one collection', async () => {
      await t.index.index('study_set', [{ id: 'nmdc:sty-11-000001', name: 'Forest soil study' }]);
      await t.settle();
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'study', flags: '' }, 100)),
      ).toEqual([]);
      await t.index.clear(C);
      await t.settle();
      expect(
        ids(await t.index.candidates(C, { kind: 'regex', path: 'name', pattern: 'forest', flags: 'i' }, 100)),
      ).toEqual([]);
      expect(
        ids(
          await t.index.candidates(
            'study_set',
            { kind: 'regex', path: 'name', pattern: 'forest', flags: 'i' },
            100,
          ),
        ),
      ).toEqual(['nmdc:sty-11-000001']);
    });

    it('remembers its freshness watermark', async () => {
      await t.index.setWatermark(42);
      expect(await t.index.watermark()).toBe(42);
    });
  });
}
