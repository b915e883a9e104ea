/**
 * The EdgeIndex port's behaviour, written once and run against every adapter that can run:
 * the embedded SQLite tables always (written by the store's hook and directly), MongoDB when
 * MONGO_URL is set (written through the store, then caught up from its change log).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import type { EdgeIndex, Referrer, Step } from '../../src/provenance/port.ts';
import { fingerprintOf } from '../../search/indexed-values.ts';

export interface EdgeIndexUnderTest {
  index: EdgeIndex;
  /** Writes records the way the case under test does, and makes the index see them. */
  upsert(collection: string, docs: Doc[]): Promise<void>;
  /** Deletes records the same way. */
  remove(collection: string, ids: string[]): Promise<void>;
  dispose(): Promise<void>;
}

export const STUDY = 'nmdc:sty-11-000001';
export const BSM1 = 'nmdc:bsm-11-000001';
export const BSM2 = 'nmdc:bsm-11-000002';
export const DGNS = 'nmdc:dgns-11-000001';
export const DOBJ1 = 'nmdc:dobj-11-000001';
export const DOBJ2 = 'nmdc:dobj-11-000002';
export const WFMGAN = 'nmdc:wfmgan-11-000001.1';

export const study: Doc = { id: STUDY, type: 'nmdc:Study', name: 'Forest soil' };
export const biosample1: Doc = {
  id: BSM1,
  type: 'nmdc:Biosample',
  name: 'core 1',
  associated_studies: [STUDY],
};
export const biosample2: Doc = {
  id: BSM2,
  type: 'nmdc:Biosample',
  name: 'core 2',
  associated_studies: [STUDY],
};
export const dataGeneration: Doc = {
  id: DGNS,
  type: 'nmdc:NucleotideSequencing',
  associated_studies: [STUDY],
  has_input: [BSM1],
  has_output: [DOBJ1],
};
export const dataObject1: Doc = { id: DOBJ1, type: 'nmdc:DataObject', was_generated_by: DGNS };
export const dataObject2: Doc = { id: DOBJ2, type: 'nmdc:DataObject', was_generated_by: WFMGAN };
export const annotation: Doc = {
  id: WFMGAN,
  type: 'nmdc:MetagenomeAnnotation',
  was_informed_by: [DGNS],
  has_input: [DOBJ1],
  has_output: [DOBJ2],
};

const ALL: Array<[string, Doc[]]> = [
  ['study_set', [study]],
  ['biosample_set', [biosample1, biosample2]],
  ['data_generation_set', [dataGeneration]],
  ['data_object_set', [dataObject1, dataObject2]],
  ['workflow_execution_set', [annotation]],
];

const sorted = (steps: Step[]) =>
  [...steps].sort((a, b) =>
    `${a.from}\u0000${a.to}\u0000${a.slot}`.localeCompare(`${b.from}\u0000${b.to}\u0000${b.slot}`),
  );

/** (from, to, slot) of each step, sorted. */
const links = (steps: Step[]) => sorted(steps).map((s) => [s.from, s.to, s.slot]);

export function edgeIndexBehaviour(name: string, makeIndex: () => Promise<EdgeIndexUnderTest>): void {
  describe(`EdgeIndex behaviour: ${name}`, () => {
    let t: EdgeIndexUnderTest;
    const all = async () => {
      for (const [collection, docs] of ALL) await t.upsert(collection, docs);
    };
    const fingerprints = async (collection: string) => {
      const out: Array<{ id: string; fingerprint: string }> = [];
      for await (const page of t.index.fingerprints(collection)) out.push(...page);
      return out;
    };

    beforeEach(async () => {
      t = await makeIndex();
    });
    afterEach(async () => {
      await t.dispose();
    });

    it("shows a record's edges in steps both ways, with the far record's type and collection", async () => {
      await all();
      expect(sorted(await t.index.step([STUDY], 'downstream'))).toEqual([
        {
          from: STUDY,
          to: BSM1,
          slot: 'associated_studies',
          type: 'nmdc:Biosample',
          collection: 'biosample_set',
        },
        {
          from: STUDY,
          to: BSM2,
          slot: 'associated_studies',
          type: 'nmdc:Biosample',
          collection: 'biosample_set',
        },
        {
          from: STUDY,
          to: DGNS,
          slot: 'associated_studies',
          type: 'nmdc:NucleotideSequencing',
          collection: 'data_generation_set',
        },
      ]);
      expect(await t.index.step([BSM1], 'upstream')).toEqual([
        { from: BSM1, to: STUDY, slot: 'associated_studies', type: 'nmdc:Study', collection: 'study_set' },
      ]);
      // Held by the data generation (has_output) and by the data object (was_generated_by).
      expect(links(await t.index.step([DGNS], 'downstream'))).toEqual([
        [DGNS, DOBJ1, 'has_output'],
        [DGNS, DOBJ1, 'was_generated_by'],
        [DGNS, WFMGAN, 'was_informed_by'],
      ]);
      expect(links(await t.index.step([DGNS], 'upstream'))).toEqual([
        [DGNS, BSM1, 'has_input'],
        [DGNS, STUDY, 'associated_studies'],
      ]);
      // Several ids at once, one of them twice, one unknown: each (from, to, slot) once.
      expect(links(await t.index.step([BSM1, WFMGAN, BSM1, 'nmdc:bsm-11-nope'], 'upstream'))).toEqual([
        [BSM1, STUDY, 'associated_studies'],
        [WFMGAN, DGNS, 'was_informed_by'],
        [WFMGAN, DOBJ1, 'has_input'],
      ]);
      expect(await t.index.step([], 'downstream')).toEqual([]);
      expect(await t.index.step([DOBJ2], 'downstream')).toEqual([]);
    });

    it('keeps a reference to an id that is no record, and follows it once the record arrives', async () => {
      await t.upsert('biosample_set', [biosample1]);
      expect(await t.index.step([BSM1], 'upstream')).toEqual([]);
      expect(await t.index.nodes([STUDY])).toEqual([]);
      await t.upsert('study_set', [study]);
      expect(await t.index.step([BSM1], 'upstream')).toEqual([
        { from: BSM1, to: STUDY, slot: 'associated_studies', type: 'nmdc:Study', collection: 'study_set' },
      ]);
      expect(links(await t.index.step([STUDY], 'downstream'))).toEqual([[STUDY, BSM1, 'associated_studies']]);
    });

    it("rewriting a record replaces its own edges and no one else's", async () => {
      await all();
      // The data object no longer says where it came from: the data generation still does.
      await t.upsert('data_object_set', [{ id: DOBJ1, type: 'nmdc:DataObject' }]);
      expect(links(await t.index.step([DGNS], 'downstream'))).toEqual([
        [DGNS, DOBJ1, 'has_output'],
        [DGNS, WFMGAN, 'was_informed_by'],
      ]);
      expect(links(await t.index.step([DOBJ1], 'upstream'))).toEqual([[DOBJ1, DGNS, 'has_output']]);
      // The data generation now takes the other biosample and outputs nothing.
      await t.upsert('data_generation_set', [
        { ...dataGeneration, has_input: [BSM2], has_output: [] as string[] },
      ]);
      expect(links(await t.index.step([DGNS], 'upstream'))).toEqual([
        [DGNS, BSM2, 'has_input'],
        [DGNS, STUDY, 'associated_studies'],
      ]);
      expect(links(await t.index.step([DGNS], 'downstream'))).toEqual([[DGNS, WFMGAN, 'was_informed_by']]);
      expect(await t.index.step([BSM1], 'downstream')).toEqual([]);
      expect(links(await t.index.step([BSM2], 'downstream'))).toEqual([[BSM2, DGNS, 'has_input']]);
      // Edges other records hold to it are untouched.
      expect(links(await t.index.step([WFMGAN], 'upstream'))).toEqual([
        [WFMGAN, DGNS, 'was_informed_by'],
        [WFMGAN, DOBJ1, 'has_input'],
      ]);
      // Its type changes with it.
      await t.upsert('data_generation_set', [{ ...dataGeneration, type: 'nmdc:MassSpectrometry' }]);
      expect(await t.index.nodes([DGNS])).toEqual([
        { id: DGNS, type: 'nmdc:MassSpectrometry', collection: 'data_generation_set' },
      ]);
      expect(links(await t.index.step([BSM1], 'downstream'))).toEqual([[BSM1, DGNS, 'has_input']]);
    });

    it('deleting a record removes the edges it holds; references to it resume when it comes back', async () => {
      await all();
      await t.remove('data_generation_set', [DGNS]);
      expect(await t.index.nodes([DGNS])).toEqual([]);
      // The references it held are gone, also when asked from its id.
      expect(await t.index.step([DGNS], 'upstream')).toEqual([]);
      expect(await t.index.step([BSM1], 'downstream')).toEqual([]);
      expect(await t.index.step([DOBJ1], 'upstream')).toEqual([]);
      expect(links(await t.index.step([WFMGAN], 'upstream'))).toEqual([[WFMGAN, DOBJ1, 'has_input']]);
      expect(links(await t.index.step([STUDY], 'downstream'))).toEqual([
        [STUDY, BSM1, 'associated_studies'],
        [STUDY, BSM2, 'associated_studies'],
      ]);
      // Back, without its input: the references others hold to it count again, its old ones do not.
      await t.upsert('data_generation_set', [{ id: DGNS, type: 'nmdc:NucleotideSequencing' }]);
      expect(links(await t.index.step([DOBJ1], 'upstream'))).toEqual([[DOBJ1, DGNS, 'was_generated_by']]);
      expect(links(await t.index.step([WFMGAN], 'upstream'))).toEqual([
        [WFMGAN, DGNS, 'was_informed_by'],
        [WFMGAN, DOBJ1, 'has_input'],
      ]);
      expect(await t.index.step([BSM1], 'downstream')).toEqual([]);
      expect(await t.index.step([DGNS], 'upstream')).toEqual([]);
    });

    it('removing ids of another collection, or unknown ones, changes nothing', async () => {
      await all();
      await t.index.remove('study_set', [DGNS, 'nmdc:sty-11-nope']);
      await t.index.remove('data_generation_set', []);
      expect(await t.index.nodes([DGNS])).toEqual([
        { id: DGNS, type: 'nmdc:NucleotideSequencing', collection: 'data_generation_set' },
      ]);
      expect(links(await t.index.step([DGNS], 'upstream'))).toEqual([
        [DGNS, BSM1, 'has_input'],
        [DGNS, STUDY, 'associated_studies'],
      ]);
    });

    it("clears one collection's records and the edges they hold, and rebuilds it", async () => {
      await all();
      await t.index.clear('data_object_set');
      expect(await fingerprints('data_object_set')).toEqual([]);
      expect(await t.index.nodes([DOBJ1, DOBJ2])).toEqual([]);
      expect(links(await t.index.step([DGNS], 'downstream'))).toEqual([[DGNS, WFMGAN, 'was_informed_by']]);
      expect(links(await t.index.step([WFMGAN], 'upstream'))).toEqual([[WFMGAN, DGNS, 'was_informed_by']]);
      expect(await fingerprints('biosample_set')).toHaveLength(2);
      // A rebuild writes the records again: the edges others hold to them had stayed.
      await t.index.index('data_object_set', [dataObject1, dataObject2]);
      expect(links(await t.index.step([DGNS], 'downstream'))).toEqual([
        [DGNS, DOBJ1, 'has_output'],
        [DGNS, DOBJ1, 'was_generated_by'],
        [DGNS, WFMGAN, 'was_informed_by'],
      ]);
      expect(links(await t.index.step([WFMGAN], 'downstream'))).toEqual([
        [WFMGAN, DOBJ2, 'has_output'],
        [WFMGAN, DOBJ2, 'was_generated_by'],
      ]);
      await t.index.clear('data_object_set');
      await t.index.clear('data_object_set');
      await t.index.clear('collecting_biosamples_from_site_set');
      expect(await fingerprints('data_object_set')).toEqual([]);
    });

    it("gives each record's content fingerprint in id order, page after page", async () => {
      await all();
      expect(await fingerprints('biosample_set')).toEqual([
        { id: BSM1, fingerprint: fingerprintOf(biosample1) },
        { id: BSM2, fingerprint: fingerprintOf(biosample2) },
      ]);
      const changed = { ...biosample2, name: 'core 2, again' };
      await t.upsert('biosample_set', [changed]);
      expect((await fingerprints('biosample_set'))[1]).toEqual({
        id: BSM2,
        fingerprint: fingerprintOf(changed),
      });
      expect(fingerprintOf(changed)).not.toBe(fingerprintOf(biosample2));
      const many = Array.from({ length: 2345 }, (_, i) => ({
        id: `nmdc:dobj-12-${String(i).padStart(5, '0')}`,
        type: 'nmdc:DataObject',
        name: `file ${i}`,
      }));
      await t.upsert('data_object_set', [...many].reverse());
      const pages: number[] = [];
      const ids: string[] = [];
      for await (const page of t.index.fingerprints('data_object_set')) {
        pages.push(page.length);
        for (const r of page) ids.push(r.id);
      }
      expect(pages.length).toBeGreaterThan(1);
      expect(ids).toEqual([DOBJ1, DOBJ2, ...many.map((d) => d.id)].sort());
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('tells which ids are records, with their type ("" when none) and collection', async () => {
      await all();
      await t.upsert('study_set', [{ id: 'nmdc:sty-11-000002', name: 'no type', part_of: [STUDY] }]);
      const nodes = await t.index.nodes([WFMGAN, 'nmdc:sty-11-000002', 'nmdc:bsm-11-nope', BSM2]);
      expect(nodes.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { id: BSM2, type: 'nmdc:Biosample', collection: 'biosample_set' },
        { id: 'nmdc:sty-11-000002', type: '', collection: 'study_set' },
        { id: WFMGAN, type: 'nmdc:MetagenomeAnnotation', collection: 'workflow_execution_set' },
      ]);
      expect(await t.index.nodes([])).toEqual([]);
      // A record of unknown type: every directed reference slot it has counts.
      expect(links(await t.index.step([STUDY], 'downstream'))).toContainEqual([
        STUDY,
        'nmdc:sty-11-000002',
        'part_of',
      ]);
      expect(
        (await t.index.step([STUDY], 'downstream')).find((s) => s.to === 'nmdc:sty-11-000002')!.type,
      ).toBe('');
    });

    it('names the records holding a reference to ids, whichever end holds it, except those excluded, up to a limit', async () => {
      await all();
      const held = (referrers: Referrer[]) =>
        referrers
          .map((r) => [r.target, r.id, r.slot, r.collection, r.type])
          .sort((a, b) => a.join().localeCompare(b.join()));
      expect(held(await t.index.referrers([STUDY], 100))).toEqual([
        [STUDY, BSM1, 'associated_studies', 'biosample_set', 'nmdc:Biosample'],
        [STUDY, BSM2, 'associated_studies', 'biosample_set', 'nmdc:Biosample'],
        [STUDY, DGNS, 'associated_studies', 'data_generation_set', 'nmdc:NucleotideSequencing'],
      ]);
      // A downstream slot (has_output) is held by its upstream end, an upstream one (has_input) by its
      // downstream end; the data object's own was_generated_by makes it no referrer of itself.
      expect(held(await t.index.referrers([DOBJ1, DGNS], 100))).toEqual([
        [DGNS, DOBJ1, 'was_generated_by', 'data_object_set', 'nmdc:DataObject'],
        [DGNS, WFMGAN, 'was_informed_by', 'workflow_execution_set', 'nmdc:MetagenomeAnnotation'],
        [DOBJ1, DGNS, 'has_output', 'data_generation_set', 'nmdc:NucleotideSequencing'],
        [DOBJ1, WFMGAN, 'has_input', 'workflow_execution_set', 'nmdc:MetagenomeAnnotation'],
      ]);
      expect(held(await t.index.referrers([STUDY], 100, [BSM1, DGNS]))).toEqual([
        [STUDY, BSM2, 'associated_studies', 'biosample_set', 'nmdc:Biosample'],
      ]);
      expect(await t.index.referrers([STUDY], 2)).toHaveLength(2);
      expect(await t.index.referrers([STUDY], 0)).toEqual([]);
      expect(await t.index.referrers([], 10)).toEqual([]);
      expect(await t.index.referrers([WFMGAN.replace('.1', '.9'), BSM2], 10)).toEqual([]);
      // References to an id that is no record are named too; a deleted holder references nothing.
      await t.remove('workflow_execution_set', [WFMGAN]);
      expect(held(await t.index.referrers([WFMGAN], 10))).toEqual([
        [WFMGAN, DOBJ2, 'was_generated_by', 'data_object_set', 'nmdc:DataObject'],
      ]);
      await t.remove('biosample_set', [BSM2]);
      expect(held(await t.index.referrers([STUDY], 10)).map((r) => r[1])).toEqual([BSM1, DGNS]);
    });

    it('covers every collection of records with ids, and keeps nothing of the others', async () => {
      expect(t.index.covers?.('biosample_set')).toBe(true);
      expect(t.index.covers?.('workflow_execution_set')).toBe(true);
      expect(t.index.covers?.('functional_annotation_agg')).toBe(false);
      await t.index.index('functional_annotation_agg', [
        { id: 'x', type: 'nmdc:FunctionalAnnotationAggMember', was_generated_by: WFMGAN },
      ]);
      expect(await fingerprints('functional_annotation_agg')).toEqual([]);
      expect(await t.index.nodes(['x'])).toEqual([]);
      await t.index.remove('functional_annotation_agg', ['x']);
      await t.index.clear('functional_annotation_agg');
    });

    it('remembers its freshness watermark', async () => {
      const before = await t.index.watermark();
      expect(before).toBeGreaterThanOrEqual(0);
      await t.index.setWatermark(before + 42);
      expect(await t.index.watermark()).toBe(before + 42);
    });
  });
}
