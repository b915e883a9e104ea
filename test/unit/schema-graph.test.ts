/**
 * The class tree and the reference slots derived from the vendored NMDC schema 11.23.0.
 */
import { describe, expect, it } from 'vitest';
import {
  allReferenceSlotNames,
  DOWNSTREAM_SLOTS,
  recordClasses,
  referenceSlotsOf,
  referencesOf,
  UPSTREAM_SLOTS,
} from '../../src/schema/reference-slots.ts';
import {
  classAndDescendants,
  isClassName,
  matchingTypes,
  typeAndAncestors,
} from '../../src/schema/class-tree.ts';
import { edgesOf } from '../../src/provenance/edges.ts';

describe('reference slots', () => {
  it('gives every slot that references records a direction (a new one fails here until placed)', () => {
    const derived = [...allReferenceSlotNames()].sort();
    expect(derived).toEqual([...UPSTREAM_SLOTS, ...DOWNSTREAM_SLOTS].sort());
  });

  it('derives the reference slots of a class from its ancestors, with its own ranges', () => {
    const slots = Object.fromEntries(referenceSlotsOf('nmdc:NucleotideSequencing').map((s) => [s.slot, s]));
    expect(Object.keys(slots).sort()).toEqual([
      'associated_studies',
      'has_input',
      'has_output',
      'instrument_used',
    ]);
    expect(slots.has_input).toEqual({ slot: 'has_input', range: 'nmdc:Sample', direction: 'upstream' });
    expect(slots.has_output).toEqual({
      slot: 'has_output',
      range: 'nmdc:DataObject',
      direction: 'downstream',
    });
    expect(
      referenceSlotsOf('nmdc:Biosample')
        .map((s) => s.slot)
        .sort(),
    ).toEqual(['associated_studies', 'collected_from']);
  });

  it('leaves out slots whose range is never a record (gene products) and inlined values', () => {
    expect(allReferenceSlotNames().has('encodes')).toBe(false);
    expect(allReferenceSlotNames().has('subject')).toBe(false);
    expect(allReferenceSlotNames().has('env_broad_scale')).toBe(false);
  });

  it('reads a record’s references, single- or multivalued, once each', () => {
    expect(
      referencesOf({
        id: 'nmdc:dobj-11-a',
        type: 'nmdc:DataObject',
        was_generated_by: 'nmdc:wfmgas-11-b.1',
        in_manifest: ['nmdc:manif-11-c', 'nmdc:manif-11-c'],
        name: 'nmdc:sty-11-not-a-reference',
      }),
    ).toEqual([
      { slot: 'was_generated_by', id: 'nmdc:wfmgas-11-b.1', direction: 'upstream' },
      { slot: 'in_manifest', id: 'nmdc:manif-11-c', direction: 'downstream' },
    ]);
  });

  it('turns references into edges from the upstream record to the downstream one', () => {
    expect(
      edgesOf({
        id: 'nmdc:dgns-11-g',
        type: 'nmdc:NucleotideSequencing',
        has_input: ['b'],
        has_output: ['o'],
      }),
    ).toEqual([
      { up: 'b', down: 'nmdc:dgns-11-g', slot: 'has_input', holder: 'down' },
      { up: 'nmdc:dgns-11-g', down: 'o', slot: 'has_output', holder: 'up' },
    ]);
  });
});

describe('class tree', () => {
  it('lists a class with its ancestors, nearest first', () => {
    expect(typeAndAncestors('nmdc:NucleotideSequencing')).toEqual([
      'nmdc:NucleotideSequencing',
      'nmdc:DataGeneration',
      'nmdc:DataEmitterProcess',
      'nmdc:PlannedProcess',
      'nmdc:NamedThing',
    ]);
  });

  it('matches every subclass of an abstract class', () => {
    const planned = classAndDescendants('nmdc:PlannedProcess');
    for (const c of [
      'nmdc:NucleotideSequencing',
      'nmdc:Extraction',
      'nmdc:ReadQcAnalysis',
      'nmdc:MagsAnalysis',
    ])
      expect(planned.has(c)).toBe(true);
    expect(planned.has('nmdc:Biosample')).toBe(false);
    expect(matchingTypes(['nmdc:Study', 'nmdc:DataObject'])).toEqual(
      new Set(['nmdc:Study', 'nmdc:DataObject']),
    );
    expect(isClassName('nmdc:InformationObject')).toBe(true);
    expect(isClassName('Biosample')).toBe(false);
  });

  it('knows the record classes of the Database collections', () => {
    const records = recordClasses();
    for (const c of [
      'nmdc:Study',
      'nmdc:Biosample',
      'nmdc:DataObject',
      'nmdc:MetagenomeAnnotation',
      'nmdc:Organism',
    ])
      expect(records.has(c)).toBe(true);
    expect(records.has('nmdc:GeneProduct')).toBe(false);
  });
});
