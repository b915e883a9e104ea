import { describe, expect, it } from 'vitest';
import {
  biosampleCountsByStudy,
  databaseJsonChunks,
  generateDatabase,
  generatedIds,
  generateRecords,
  plannedCounts,
  studyIdWithBiosamples,
  type GenerateOptions,
} from '../../src/data/generator.ts';
import { MAX_COUNT, parseGenerateArgs } from '../../src/cli/generate-data.ts';
import { DEMO_DATA_SET } from '../../src/startup.ts';
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
    const forms: Record<string, RegExp> = {
      'nmdc:ReadQcAnalysis': /^nmdc:wfrqc-11-[0-9a-z]{8}\.1$/,
      'nmdc:ReadBasedTaxonomyAnalysis': /^nmdc:wfrbt-11-[0-9a-z]{8}\.1$/,
      'nmdc:MetagenomeAssembly': /^nmdc:wfmgas-11-[0-9a-z]{8}\.1$/,
      'nmdc:MetagenomeAnnotation': /^nmdc:wfmgan-11-[0-9a-z]{8}\.1$/,
      'nmdc:MagsAnalysis': /^nmdc:wfmag-11-[0-9a-z]{8}\.1$/,
    };
    for (const w of ofCollection('workflow_execution_set')) expect(w.id).toMatch(forms[w.type as string]!);
    expect(new Set(ofCollection('workflow_execution_set').map((w) => w.type))).toEqual(
      new Set(Object.keys(forms)),
    );
    for (const g of ofCollection('data_generation_set')) expect(g.id).toMatch(/^nmdc:dgns-11-[0-9a-z]{8}$/);
    for (const d of ofCollection('data_object_set'))
      expect(d).toMatchObject({
        id: expect.stringMatching(/^nmdc:dobj-11-[0-9a-z]{8}$/),
        type: 'nmdc:DataObject',
      });
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
    for (const s of ofCollection('study_set'))
      for (const p of (s.part_of as string[]) ?? []) exists(p, 'study_set');
    for (const b of ofCollection('biosample_set'))
      for (const s of b.associated_studies as string[]) exists(s, 'study_set');
    for (const g of ofCollection('data_generation_set')) {
      for (const b of g.has_input as string[]) exists(b, 'biosample_set');
      for (const s of g.associated_studies as string[]) exists(s, 'study_set');
      for (const d of g.has_output as string[]) {
        exists(d, 'data_object_set');
        expect(byId.get(d)!.was_generated_by).toBe(g.id);
      }
    }
    for (const w of ofCollection('workflow_execution_set')) {
      for (const d of [...(w.has_input as string[]), ...(w.has_output as string[])])
        exists(d, 'data_object_set');
      for (const g of w.was_informed_by as string[]) exists(g, 'data_generation_set');
      for (const d of w.has_output as string[]) expect(byId.get(d)!.was_generated_by).toBe(w.id);
    }
    for (const d of ofCollection('data_object_set')) {
      if (d.was_generated_by === undefined) continue; // an unlinked upload
      const producer = byId.get(d.was_generated_by as string)!;
      expect(producer, d.id).toBeDefined();
      expect(['data_generation_set', 'workflow_execution_set']).toContain(collectionOfId(producer.id));
      expect(producer.has_output, d.id).toContain(d.id);
    }
    // This budget links every data object: four complete pipelines and one run only sequenced.
    expect(ofCollection('data_object_set').every((d) => d.was_generated_by !== undefined)).toBe(true);
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
    expect(ofCollection('data_generation_set')[0]).toMatchObject({
      type: 'nmdc:NucleotideSequencing',
      analyte_category: 'metagenome',
    });
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
    // Ten studies of at most 5 cannot hold 100 biosamples; nor can a largest study exceed them all.
    expect(() =>
      generateDatabase({ studies: 10, biosamples: 100, dataObjects: 0, largestStudyBiosamples: 5 }),
    ).toThrow(/too small/);
    expect(() =>
      biosampleCountsByStudy({ studies: 10, biosamples: 100, dataObjects: 0, largestStudyBiosamples: 101 }),
    ).toThrow(/largestStudyBiosamples/);
  });
});

/** Records of a run, indexed by id, with each data generation's workflows and data objects. */
function lineageOf(options: GenerateOptions) {
  const db = generateDatabase(options);
  const byId = new Map<string, Doc>();
  for (const docs of Object.values(db)) for (const d of docs) byId.set(d.id, d);
  const workflowsOf = new Map<string, Doc[]>();
  for (const w of db.workflow_execution_set ?? []) {
    const [g] = w.was_informed_by as string[];
    workflowsOf.set(g!, [...(workflowsOf.get(g!) ?? []), w]);
  }
  /** Data objects of a data generation: its raw reads and every output of its workflows. */
  const dataObjectsOf = (g: Doc) => [
    ...(g.has_output as string[]),
    ...(workflowsOf.get(g.id) ?? []).flatMap((w) => w.has_output as string[]),
  ];
  return { db, byId, workflowsOf, dataObjectsOf };
}

const PIPELINE = [
  'nmdc:ReadQcAnalysis',
  'nmdc:ReadBasedTaxonomyAnalysis',
  'nmdc:MetagenomeAssembly',
  'nmdc:MetagenomeAnnotation',
  'nmdc:MagsAnalysis',
];

describe('generated lineage', () => {
  // Thirty data objects per biosample, the ratio benchmarks use.
  const OPTIONS30 = { studies: 6, biosamples: 48, dataObjects: 48 * 30, seed: 7 };
  const { db, byId, workflowsOf, dataObjectsOf } = lineageOf(OPTIONS30);
  const typeOf = (id: string) => byId.get(id)!.data_object_type;

  it('chains workflows: each reads the raw reads or outputs of earlier workflows of its data generation', () => {
    expect(db.data_generation_set).toHaveLength(48);
    for (const g of db.data_generation_set!) {
      const [raw] = g.has_output as string[];
      expect(g.has_output).toHaveLength(1);
      expect(byId.get(raw!)).toMatchObject({
        data_object_type: 'Metagenome Raw Reads',
        was_generated_by: g.id,
      });
      const workflows = workflowsOf.get(g.id)!;
      // Complete pipelines: the five stages in order, or four when binning did not run.
      expect(workflows.map((w) => w.type)).toEqual(PIPELINE.slice(0, workflows.length));
      expect(workflows.length).toBeGreaterThanOrEqual(4);
      for (const [i, w] of workflows.entries()) {
        expect(w.was_informed_by).toEqual([g.id]);
        for (const input of w.has_input as string[]) {
          const producer = byId.get(byId.get(input)!.was_generated_by as string)!;
          if (producer.id === g.id) {
            expect(input).toBe(raw);
            continue;
          }
          const earlier = workflows.indexOf(producer);
          expect(earlier, `${w.id} reads ${input}`).toBeGreaterThanOrEqual(0);
          expect(earlier).toBeLessThan(i);
          expect(producer.has_output).toContain(input);
          expect(Date.parse(producer.ended_at_time as string)).toBeLessThanOrEqual(
            Date.parse(w.started_at_time as string),
          );
        }
        expect(Date.parse(w.started_at_time as string)).toBeLessThan(Date.parse(w.ended_at_time as string));
        expect(Date.parse(w.started_at_time as string)).toBeGreaterThan(Date.parse(g.start_date as string));
      }
      const [qc, taxonomy, assembly, annotation, mags] = workflows;
      expect((qc!.has_input as string[]).map(typeOf)).toEqual(['Metagenome Raw Reads']);
      expect((taxonomy!.has_input as string[]).map(typeOf)).toEqual(['Filtered Sequencing Reads']);
      expect((assembly!.has_input as string[]).map(typeOf)).toEqual(['Filtered Sequencing Reads']);
      expect((annotation!.has_input as string[]).map(typeOf)).toEqual(['Assembly Contigs']);
      if (mags) expect((mags.has_input as string[]).map(typeOf)).toContain('Assembly Contigs');
      expect((qc!.has_output as string[]).map(typeOf)).toEqual(
        expect.arrayContaining(['Filtered Sequencing Reads', 'QC Statistics']),
      );
      expect((assembly!.has_output as string[]).map(typeOf)).toEqual(
        expect.arrayContaining(['Assembly Contigs', 'Assembly Scaffolds']),
      );
      expect((taxonomy!.has_output as string[]).map(typeOf)).toEqual(
        expect.arrayContaining(['Kraken2 Classification Report', 'GOTTCHA2 Classification Report']),
      );
      expect((annotation!.has_output as string[]).map(typeOf)).toEqual(
        expect.arrayContaining(['Annotation Amino Acid FASTA', 'Functional Annotation GFF']),
      );
      if (mags)
        expect((mags.has_output as string[]).map(typeOf)).toContain('Metagenome HQMQ Bins Compression File');
    }
    const withBins = db.data_generation_set!.filter((g) => workflowsOf.get(g.id)!.length === 5).length;
    expect(withBins).toBe(36); // three in four
  });

  it('gives every biosample its sequencing run with tens of data objects, and every data object one producer', () => {
    const perBiosample = new Map<string, number>();
    for (const g of db.data_generation_set!) {
      const [b] = g.has_input as string[];
      expect(perBiosample.has(b!), b).toBe(false); // one data generation per biosample
      perBiosample.set(b!, dataObjectsOf(g).length);
      expect(g.associated_studies).toEqual(byId.get(b!)!.associated_studies);
    }
    expect(perBiosample.size).toBe(OPTIONS30.biosamples);
    for (const n of perBiosample.values()) {
      expect(n).toBeGreaterThanOrEqual(20);
      expect(n).toBeLessThanOrEqual(40);
    }
    const linked = [...perBiosample.values()].reduce((a, b) => a + b, 0);
    const uploads = db.data_object_set!.filter((d) => d.was_generated_by === undefined);
    expect(linked + uploads.length).toBe(OPTIONS30.dataObjects);
    expect(uploads.length).toBeLessThan(OPTIONS30.biosamples); // under one per biosample left over
    // No data object is claimed twice.
    const claimed = db.data_generation_set!.flatMap(dataObjectsOf);
    expect(new Set(claimed).size).toBe(claimed.length);
  });

  it('spends a short budget on complete pipelines first, then one cut short, then unlinked uploads', () => {
    for (const dataObjects of [0, 1, 5, 30, 31, 57, 60, 88, 120, 300, 2000]) {
      const options = { studies: 3, biosamples: 10, dataObjects, seed: 3 };
      const { db: run, workflowsOf: flows, dataObjectsOf: objectsOf } = lineageOf(options);
      const counts = Object.fromEntries(Object.entries(run).map(([c, docs]) => [c, docs.length]));
      expect({ data_generation_set: 0, workflow_execution_set: 0, data_object_set: 0, ...counts }).toEqual(
        plannedCounts(options),
      );
      const generations = run.data_generation_set ?? [];
      const stages = generations.map((g) => (flows.get(g.id) ?? []).length);
      // Only the last data generation may run fewer stages than its complete pipeline.
      for (const [i, n] of stages.entries())
        if (i < stages.length - 1) expect(n, `${dataObjects}`).toBeGreaterThanOrEqual(4);
      for (const g of generations)
        for (const d of objectsOf(g)) expect(run.data_object_set!.some((o) => o.id === d)).toBe(true);
      const uploads = (run.data_object_set ?? []).filter((d) => d.was_generated_by === undefined).length;
      // Uploads only once every biosample has its run, or what is too few for the next stage's outputs.
      if (generations.length < options.biosamples) expect(uploads, `${dataObjects}`).toBeLessThan(8);
    }
  });

  it('keeps plannedCounts exact for any budget', () => {
    for (let biosamples = 0; biosamples <= 9; biosamples += 3)
      for (let dataObjects = 0; dataObjects <= 400; dataObjects += 13) {
        const options = { studies: 2, biosamples, dataObjects, seed: 9 };
        const counts: Record<string, number> = {
          study_set: 0,
          biosample_set: 0,
          data_generation_set: 0,
          workflow_execution_set: 0,
          data_object_set: 0,
        };
        for (const { collection } of generateRecords(options)) counts[collection]!++;
        expect(counts, JSON.stringify(options)).toEqual(plannedCounts(options));
      }
  });
});

describe('skewed study sizes', () => {
  const SKEWED = {
    studies: 50,
    biosamples: 2000,
    dataObjects: 2000 * 30,
    seed: 5,
    largestStudyBiosamples: 500,
  };

  it('gives the largest study the requested biosamples and spreads the rest Zipf-like over every study', () => {
    const counts = biosampleCountsByStudy(SKEWED);
    expect(counts).toHaveLength(50);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(2000);
    expect(counts[0]).toBe(500);
    expect(Math.max(...counts.slice(1))).toBeLessThanOrEqual(500);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(1);
    for (let s = 2; s < counts.length; s++) expect(counts[s]).toBeLessThanOrEqual(counts[s - 1]!);
    expect(counts[1]! / counts[10]!).toBeGreaterThan(5); // about 10 for a 1/k law
    // The helper finds studies by size.
    const ids = generatedIds(SKEWED.seed);
    expect(studyIdWithBiosamples(SKEWED, 500)).toBe(ids.study(0));
    const near100 = counts.reduce(
      (best, n, s) => (Math.abs(n - 100) < Math.abs(counts[best]! - 100) ? s : best),
      0,
    );
    expect(studyIdWithBiosamples(SKEWED, 100)).toBe(ids.study(near100));
  });

  it('generates what biosampleCountsByStudy says, links as usual, and is deterministic', () => {
    const { db, byId, workflowsOf, dataObjectsOf } = lineageOf(SKEWED);
    const counts = biosampleCountsByStudy(SKEWED);
    const ids = generatedIds(SKEWED.seed);
    const perStudy = new Map<string, number>();
    for (const b of db.biosample_set!) {
      const [s] = b.associated_studies as string[];
      perStudy.set(s!, (perStudy.get(s!) ?? 0) + 1);
    }
    for (const [s, n] of counts.entries()) expect(perStudy.get(ids.study(s)) ?? 0).toBe(n);
    // The largest study's data objects: its biosamples' pipelines, about 30 each.
    const largest = ids.study(0);
    const objects = db
      .data_generation_set!.filter((g) => (g.associated_studies as string[])[0] === largest)
      .flatMap(dataObjectsOf);
    expect(objects.length).toBeGreaterThan(500 * 25);
    expect(objects.length).toBeLessThan(500 * 32);
    for (const id of objects) expect(byId.has(id)).toBe(true);
    expect(workflowsOf.size).toBe(2000);
    expect(generateDatabase(SKEWED)).toEqual(db);
    expect(Object.fromEntries(Object.entries(db).map(([c, d]) => [c, d.length]))).toEqual(
      plannedCounts(SKEWED),
    );
  });

  it('spreads a short data object budget over the studies, not only the largest', () => {
    const short = { ...SKEWED, dataObjects: 300 * 30 };
    const db = generateDatabase(short);
    const studies = new Set(db.data_generation_set!.map((g) => (g.associated_studies as string[])[0]));
    expect(db.data_generation_set!.length).toBeGreaterThan(290);
    expect(studies.size).toBeGreaterThan(20);
    const inLargest = db.data_generation_set!.filter(
      (g) => (g.associated_studies as string[])[0] === generatedIds(5).study(0),
    );
    expect(inLargest.length / db.data_generation_set!.length).toBeGreaterThan(0.15);
    expect(inLargest.length / db.data_generation_set!.length).toBeLessThan(0.35);
  });

  it('keeps the even spread when the option is absent', () => {
    expect(biosampleCountsByStudy({ studies: 4, biosamples: 10, dataObjects: 0 })).toEqual([3, 3, 2, 2]);
    const db = generateDatabase({ studies: 4, biosamples: 10, dataObjects: 0, seed: 1 });
    const ids = generatedIds(1);
    db.biosample_set!.forEach((b, i) => expect(b.associated_studies).toEqual([ids.study(i % 4)]));
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
      idSpace: 'distinct',
      studies: 2,
      biosamples: 30,
      dataObjects: 7,
      seed: 9,
      out: 'x.json.gz',
    });
  });

  it('gives ids that never collide with the demo data set, whatever the seed', () => {
    const demoIds = new Set([...generateRecords(DEMO_DATA_SET)].map((r) => r.doc.id as string));
    expect(demoIds.size).toBeGreaterThan(2000);
    for (const seed of ['1', '2', '7']) {
      const options = parseGenerateArgs([
        '--studies',
        '10',
        '--biosamples',
        '300',
        '--data-objects',
        '3000',
        '--seed',
        seed,
      ]);
      const ids = [...generateRecords(options)].map((r) => r.doc.id as string);
      expect(ids.filter((id) => demoIds.has(id))).toEqual([]);
      expect(new Set(ids).size).toBe(ids.length);
      // Still NMDC ids of the central shoulder, nine-character blades.
      expect(ids.every((id) => /^nmdc:[a-z]+-11-[0-9a-z]{9}(\.1)?$/.test(id))).toBe(true);
    }
  });

  it('reads the largest study size, and checks it against the other counts', () => {
    expect(
      parseGenerateArgs([
        '--studies',
        '1000',
        '--biosamples',
        '27000',
        '--largest-study-biosamples',
        '10000',
      ]),
    ).toMatchObject({
      studies: 1000,
      biosamples: 27000,
      largestStudyBiosamples: 10000,
    });
    expect(parseGenerateArgs([])).not.toHaveProperty('largestStudyBiosamples');
    expect(() =>
      parseGenerateArgs(['--studies', '2', '--biosamples', '100', '--largest-study-biosamples', '10']),
    ).toThrow(/too small/);
  });

  it('rejects unknown options and bad numbers', () => {
    expect(() => parseGenerateArgs(['--studies', 'many'])).toThrow(
      /--studies must be a non-negative integer/,
    );
    expect(() => parseGenerateArgs(['--colour', 'red'])).toThrow(/unknown option --colour/);
    // Digits only: no exponent, sign, hex or blank; and no count past MAX_COUNT (a run of 10^12
    // biosamples would have written until the disk was full).
    for (const raw of ['1e12', '-5', '0x10', ' ', '', '1.5', '+3'])
      expect(() => parseGenerateArgs(['--biosamples', raw])).toThrow(
        `--biosamples must be a non-negative integer, got "${raw}"`,
      );
    for (const raw of [String(MAX_COUNT + 1), '99999999999999999999'])
      expect(() => parseGenerateArgs([`--data-objects=${raw}`])).toThrow(
        `--data-objects may be at most 100,000,000, got "${raw}"`,
      );
    expect(parseGenerateArgs(['--seed', '007', '--biosamples', String(MAX_COUNT)])).toMatchObject({
      seed: 7,
      biosamples: MAX_COUNT,
    });
  });
});
