import { describe, expect, it } from 'vitest';
import {
  databaseJsonChunks,
  generateDatabase,
  generateRecords,
  plannedCounts,
} from '../../src/data/generator.ts';
import { parseGenerateArgs } from '../../src/cli/generate-data.ts';
import { collectionOfId, ID_PATTERN } from '../../src/schema/nmdc.ts';
import type { Doc } from '../../src/store/port.ts';

const OPTIONS = { studies: 4, biosamples: 40, dataObjects: 120, seed: 42 };

describe('generateRecords', () => {
  const db = generateDatabase(OPTIONS);
  const all = Object.entries(db).flatMap(([collection, docs]) => docs.map((doc) => ({ collection, doc })));
  const byId = new Map(all.map(({ doc }) => [doc.id, doc]));
  const ofCollection = (c: string): Doc[] => db[c] ?? [];

  it('produces the planned number of records per collection', () => {
    const counts = Object.fromEntries(Object.entries(db).map(([c, docs]) => [c, docs.length]));
    expect(counts).toEqual(plannedCounts(OPTIONS));
    expect(counts).toMatchObject({ study_set: 4, biosample_set: 40, data_object_set: 120 });
  });

  it('gives every record a unique, well-formed id whose typecode belongs to its collection', () => {
    expect(byId.size).toBe(all.length);
    for (const { collection, doc } of all) {
      expect(doc.id).toMatch(ID_PATTERN);
      expect(collectionOfId(doc.id), doc.id).toBe(collection);
    }
    expect(ofCollection('study_set')[0]!.id).toMatch(/^nmdc:sty-11-[0-9a-z]{8}$/);
    expect(ofCollection('workflow_execution_set').map((w) => w.type)).toContain('nmdc:MetagenomeAssembly');
  });

  it('is deterministic for a seed and different for another seed', () => {
    expect(generateDatabase(OPTIONS)).toEqual(db);
    const other = generateDatabase({ ...OPTIONS, seed: 43 });
    expect(other.biosample_set![0]!.id).not.toBe(db.biosample_set![0]!.id);
  });

  it('links records to records that exist: biosamples to studies, processes to inputs and outputs', () => {
    const exists = (id: unknown, collection: string) => {
      expect(typeof id).toBe('string');
      expect(collectionOfId(id as string)).toBe(collection);
      expect(byId.has(id as string), String(id)).toBe(true);
    };
    for (const b of ofCollection('biosample_set'))
      for (const s of b.associated_studies as string[]) exists(s, 'study_set');
    for (const g of ofCollection('data_generation_set')) {
      for (const b of g.has_input as string[]) exists(b, 'biosample_set');
      for (const s of g.associated_studies as string[]) exists(s, 'study_set');
    }
    for (const w of ofCollection('workflow_execution_set')) {
      for (const d of [...(w.has_input as string[]), ...(w.has_output as string[])])
        exists(d, 'data_object_set');
      for (const g of w.was_informed_by as string[]) exists(g, 'data_generation_set');
      for (const d of w.has_output as string[]) expect(byId.get(d)!.was_generated_by).toBe(w.id);
    }
    for (const d of ofCollection('data_object_set')) {
      const producer = byId.get(d.was_generated_by as string)!;
      expect(producer, d.id).toBeDefined();
      expect(['data_generation_set', 'workflow_execution_set']).toContain(collectionOfId(producer.id));
    }
  });

  it('shapes records like the NMDC schema', () => {
    const b = ofCollection('biosample_set')[0]!;
    expect(b).toMatchObject({
      type: 'nmdc:Biosample',
      geo_loc_name: { has_raw_value: expect.any(String), type: 'nmdc:TextValue' },
      lat_lon: { latitude: expect.any(Number), longitude: expect.any(Number), type: 'nmdc:GeolocationValue' },
      depth: { has_numeric_value: expect.any(Number), has_unit: 'm', type: 'nmdc:QuantityValue' },
      env_broad_scale: { term: { id: expect.stringMatching(/^ENVO:/), name: expect.any(String) } },
      ecosystem: expect.any(String),
      ecosystem_category: expect.any(String),
      ecosystem_type: expect.any(String),
      ecosystem_subtype: expect.any(String),
      specific_ecosystem: expect.any(String),
    });
    const s = ofCollection('study_set')[0]!;
    expect(s).toMatchObject({
      type: 'nmdc:Study',
      study_category: 'research_study',
      name: expect.any(String),
    });
    expect(Array.isArray(s.funding_sources)).toBe(true);
    const d = ofCollection('data_object_set')[5]!;
    expect(d).toMatchObject({
      type: 'nmdc:DataObject',
      data_object_type: expect.any(String),
      url: expect.stringMatching(/^https:\/\//),
    });
    expect(d.md5_checksum).toMatch(/^[0-9a-f]{32}$/);
    expect(d.file_size_bytes).toBeGreaterThan(0);
  });

  it('includes plant biosamples north of 45 degrees, as in the documentation examples', () => {
    const hits = ofCollection('biosample_set').filter(
      (b) => b.ecosystem_category === 'Plants' && (b.lat_lon as { latitude: number }).latitude > 45,
    );
    expect(hits.length).toBeGreaterThan(0);
  });

  it('streams valid NMDC Database JSON', () => {
    const text = [...databaseJsonChunks(generateRecords(OPTIONS))].join('');
    expect(JSON.parse(text)).toEqual(db);
    expect(JSON.parse([...databaseJsonChunks([])].join(''))).toEqual({});
  });

  it('rejects biosamples without studies and negative counts', () => {
    expect(() => generateDatabase({ studies: 0, biosamples: 1, dataObjects: 0 })).toThrow(
      /at least one study/,
    );
    expect(() => generateDatabase({ studies: -1, biosamples: 0, dataObjects: 0 })).toThrow(/non-negative/);
  });
});

describe('generate-data arguments', () => {
  it('reads counts, seed and output file', () => {
    expect(
      parseGenerateArgs([
        '--studies',
        '2',
        '--biosamples=30',
        '--data-objects',
        '7',
        '--seed',
        '9',
        '--out',
        'x.json.gz',
      ]),
    ).toEqual({
      studies: 2,
      biosamples: 30,
      dataObjects: 7,
      seed: 9,
      out: 'x.json.gz',
    });
  });

  it('rejects unknown options and bad numbers', () => {
    expect(() => parseGenerateArgs(['--studies', 'many'])).toThrow(
      /--studies must be a non-negative integer/,
    );
    expect(() => parseGenerateArgs(['--colour', 'red'])).toThrow(/unknown option --colour/);
  });
});
