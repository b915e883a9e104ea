/**
 * Seeded generator of realistic NMDC-shaped records: studies, biosamples, sequencing data
 * generations, workflow executions and data objects, linked the way the real data is: biosample
 * -> study; data generation -> biosample, producing the raw reads; per data generation a chain of
 * workflow executions (reads QC, then read-based taxonomy and assembly of the filtered reads, then
 * annotation and binning of the assembly), each informed by the data generation, reading outputs
 * of the earlier ones and producing its own data objects (about 30 per biosample). Deterministic
 * for a seed; records are produced lazily so millions of data objects never sit in memory.
 */
import type { Doc } from '../store/port.ts';
import { prng } from './ids.ts';
import { ECOSYSTEMS, SITES, PEOPLE, FUNDERS } from './vocabulary.ts';
import { type GenerateOptions, STAGES, STAGE_START, stagesOf, objectsBefore, planOf, generatedIds, validate, studyOfBiosampleFn } from './plan.ts';

// The generator's public face: what callers plan, count and name with.
export { prng } from './ids.ts';
export {
  GENERATED_COLLECTIONS,
  biosampleCountsByStudy,
  generatedIds,
  plannedCounts,
  studyIdWithBiosamples,
  type GenerateOptions,
} from './plan.ts';

export interface GeneratedRecord {
  collection: string;
  doc: Doc;
}

/** Yields every record, collection by collection in GENERATED_COLLECTIONS order. */
export function* generateRecords(options: GenerateOptions): Generator<GeneratedRecord> {
  validate(options);
  const { studies, biosamples, dataObjects } = options;
  const seed = options.seed ?? 1;
  const ids = generatedIds(seed, options.idSpace);
  const plan = planOf(options);
  const G = plan.generations;

  const { study: studyId, biosample: biosampleId, dataGeneration: generationId, dataObject: dataObjectId } = ids;
  const studyOfBiosample = studyOfBiosampleFn(options);
  const ecosystemOfStudy = (s: number) => ECOSYSTEMS[s % ECOSYSTEMS.length]!;
  const siteOfStudy = (s: number) => SITES[(s * 3) % SITES.length]!;
  /** Stages data generation g runs. */
  const stagesRun = (g: number) => (g < plan.complete ? stagesOf(g) : plan.partialStages!);

  for (let s = 0; s < studies; s++) {
    const rnd = prng(seed * 1_000_003 + s);
    const eco = ecosystemOfStudy(s);
    const site = siteOfStudy(s);
    const pi = PEOPLE[Math.floor(rnd() * PEOPLE.length)]!;
    const place = site[0].split(': ')[1]!;
    const doc: Doc = {
      id: studyId(s),
      type: 'nmdc:Study',
      name: `${eco.words} in ${place}`,
      title: `${eco.words} in ${place}: seasonal and spatial variation`,
      description: `This study characterises ${eco.words.toLowerCase()} sampled across ${place} to understand how microbial communities respond to environmental change.`,
      study_category: 'research_study',
      ecosystem: eco.ecosystem,
      ecosystem_category: eco.ecosystem_category,
      ecosystem_type: eco.ecosystem_type,
      ecosystem_subtype: eco.ecosystem_subtype,
      specific_ecosystem: eco.specific_ecosystem,
      principal_investigator: { has_raw_value: pi, name: pi, type: 'nmdc:PersonValue' },
      funding_sources: [FUNDERS[s % FUNDERS.length]!, `Award DE-SC00${10000 + Math.floor(rnd() * 89999)}`],
      gold_study_identifiers: [`gold:Gs0${100000 + Math.floor(rnd() * 899999)}`],
      alternative_identifiers: [`emsl.project:${50000 + s}`],
      websites: [`https://microbiomedata.org/studies/${s}`],
    };
    if (s % 5 === 4) doc.part_of = [studyId(0)];
    yield { collection: 'study_set', doc };
  }

  for (let b = 0; b < biosamples; b++) {
    const rnd = prng(seed * 2_000_003 + b);
    const s = studyOfBiosample(b);
    const eco = ecosystemOfStudy(s);
    const [locName, lat, lon] = siteOfStudy(s);
    const latitude = Math.round((lat + (rnd() - 0.5) * 0.4) * 1e4) / 1e4;
    const longitude = Math.round((lon + (rnd() - 0.5) * 0.4) * 1e4) / 1e4;
    const depth = Math.round(rnd() * 100) / 100;
    const date = new Date(Date.UTC(2015 + Math.floor(rnd() * 8), Math.floor(rnd() * 12), 1 + Math.floor(rnd() * 28)));
    const term = ([id, name]: [string, string]) => ({
      has_raw_value: `${name} [${id}]`,
      term: { id, name, type: 'nmdc:OntologyClass' },
      type: 'nmdc:ControlledIdentifiedTermValue',
    });
    const medium = eco.medium[1][0]!.toUpperCase() + eco.medium[1].slice(1);
    const label = `${medium} sample ${b} from ${locName.split(', ')[1]}`;
    yield {
      collection: 'biosample_set',
      doc: {
        id: biosampleId(b),
        type: 'nmdc:Biosample',
        name: label,
        samp_name: `${eco.ecosystem_type.slice(0, 3).toUpperCase()}-${b}`,
        description: `${eco.medium[1]} collected at ${depth} m depth`,
        associated_studies: [studyId(s)],
        env_broad_scale: term(eco.broad),
        env_local_scale: term(eco.local),
        env_medium: term(eco.medium),
        ecosystem: eco.ecosystem,
        ecosystem_category: eco.ecosystem_category,
        ecosystem_type: eco.ecosystem_type,
        ecosystem_subtype: eco.ecosystem_subtype,
        specific_ecosystem: eco.specific_ecosystem,
        geo_loc_name: { has_raw_value: locName, type: 'nmdc:TextValue' },
        lat_lon: { has_raw_value: `${latitude} ${longitude}`, latitude, longitude, type: 'nmdc:GeolocationValue' },
        depth: { has_raw_value: `${depth} m`, has_numeric_value: depth, has_unit: 'm', type: 'nmdc:QuantityValue' },
        collection_date: { has_raw_value: date.toISOString().slice(0, 10), type: 'nmdc:TimestampValue' },
        alternative_identifiers: [`gold:Gb0${100000 + b}`, `igsn:NMDC${ids.blade(b).toUpperCase()}`],
      },
    };
  }

  for (let g = 0; g < G; g++) {
    const rnd = prng(seed * 3_000_017 + g);
    const b = g; // data generation g sequences biosample g
    const start = new Date(Date.UTC(2018 + Math.floor(rnd() * 6), Math.floor(rnd() * 12), 1 + Math.floor(rnd() * 28)));
    yield {
      collection: 'data_generation_set',
      doc: {
        id: generationId(g),
        type: 'nmdc:NucleotideSequencing',
        name: `Metagenome sequencing of biosample ${biosampleId(b)}`,
        description: 'Illumina NovaSeq shotgun metagenome sequencing',
        analyte_category: 'metagenome',
        associated_studies: [studyId(studyOfBiosample(b))],
        has_input: [biosampleId(b)],
        has_output: [dataObjectId(objectsBefore(g))],
        processing_institution: 'JGI',
        start_date: start.toISOString().slice(0, 10),
        gold_sequencing_project_identifiers: [`gold:Gp0${100000 + g}`],
      },
    };
  }

  const HOUR = 3_600_000;
  const ended: number[] = [];
  for (let g = 0; g < G; g++) {
    const sequenced = prng(seed * 3_000_017 + g);
    const sequencedAt = Date.UTC(
      2018 + Math.floor(sequenced() * 6),
      Math.floor(sequenced() * 12),
      1 + Math.floor(sequenced() * 28),
    );
    const rnd = prng(seed * 4_000_037 + g);
    // Processing starts weeks to months after sequencing; each stage starts once the stages whose
    // outputs it reads have ended.
    const readsReady = sequencedAt + Math.floor((14 + rnd() * 180) * 24) * HOUR;
    const first = objectsBefore(g);
    const objectOf = ([stage, output]: readonly [number, number]) =>
      dataObjectId(stage < 0 ? first : first + STAGE_START[stage]! + output);
    const stages = stagesRun(g);
    for (let st = 0; st < stages; st++) {
      const stage = STAGES[st]!;
      let ready = readsReady;
      for (const [from] of stage.inputs) if (from >= 0) ready = Math.max(ready, ended[from]!);
      const started = ready + Math.floor(rnd() * 4 * HOUR);
      ended[st] = started + Math.floor(stage.hours * (1 + rnd() * 3) * HOUR);
      yield {
        collection: 'workflow_execution_set',
        doc: {
          id: ids.workflowExecution(g, st),
          type: stage.type,
          name: `${stage.name} for ${generationId(g)}`,
          git_url: stage.git,
          version: stage.version,
          started_at_time: new Date(started).toISOString(),
          ended_at_time: new Date(ended[st]!).toISOString(),
          was_informed_by: [generationId(g)],
          has_input: stage.inputs.map(objectOf),
          has_output: stage.outputs.map((_, o) => dataObjectId(first + STAGE_START[st]! + o)),
          processing_institution: 'NMDC',
          execution_resource: 'NERSC-Perlmutter',
        },
      };
    }
  }

  const hex = (rnd: () => number) => {
    let out = '';
    for (let i = 0; i < 4; i++) out += Math.floor(rnd() * 2 ** 32).toString(16).padStart(8, '0');
    return out;
  };
  const dataObject = (
    j: number,
    dataObjectType: string,
    category: string,
    fileName: string,
    generatedBy: string | undefined,
    path: string,
    maxBytes: number,
  ): GeneratedRecord => {
    const rnd = prng(seed * 5_000_011 + j);
    const doc: Doc = {
      id: dataObjectId(j),
      type: 'nmdc:DataObject',
      name: fileName,
      description: `${dataObjectType} for ${generatedBy ?? 'an unlinked upload'}`,
      data_category: category,
      data_object_type: dataObjectType,
      file_size_bytes: Math.floor(1_000 + rnd() * maxBytes),
      md5_checksum: hex(rnd),
      url: `https://data.microbiomedata.org/data/${path}/${fileName}`,
    };
    if (generatedBy) doc.was_generated_by = generatedBy;
    return { collection: 'data_object_set', doc };
  };
  let j = 0;
  for (let g = 0; g < G; g++) {
    const generation = generationId(g);
    const b = ids.blade(g);
    yield dataObject(j++, 'Metagenome Raw Reads', 'instrument_data', `${b}.fastq.gz`, generation, generation, 5e9);
    const stages = stagesRun(g);
    for (let st = 0; st < stages; st++) {
      const stage = STAGES[st]!;
      const workflow = ids.workflowExecution(g, st);
      const prefix = `nmdc_${stage.typecode}-11-${b}.1_`;
      const path = `${generation}/${workflow}`;
      for (const output of stage.outputs) {
        const big = output.file.endsWith('.fastq.gz') || output.file.endsWith('.bam');
        yield dataObject(j++, output.type, 'processed_data', prefix + output.file, workflow, path, big ? 5e9 : 2e8);
      }
    }
  }
  for (; j < dataObjects; j++)
    yield dataObject(j, 'Metagenome Raw Reads', 'instrument_data', `reads_${j}.fastq.gz`, undefined, 'uploads', 5e9);
}

/** All generated records grouped by collection (small sets: tests, demo data). */
export function generateDatabase(options: GenerateOptions): Record<string, Doc[]> {
  const db: Record<string, Doc[]> = {};
  for (const { collection, doc } of generateRecords(options)) (db[collection] ??= []).push(doc);
  return db;
}

/** NMDC Database JSON text, produced piece by piece in document order. */
export function* databaseJsonChunks(records: Iterable<GeneratedRecord>): Generator<string> {
  let current: string | undefined;
  let first = true;
  let buffer = '';
  for (const { collection, doc } of records) {
    if (collection !== current) {
      buffer += `${current === undefined ? '{\n' : '\n],\n'}${JSON.stringify(collection)}: [\n`;
      current = collection;
      first = true;
    }
    buffer += (first ? '' : ',\n') + JSON.stringify(doc);
    first = false;
    if (buffer.length > 1 << 16) {
      yield buffer;
      buffer = '';
    }
  }
  buffer += current === undefined ? '{}\n' : '\n]\n}\n';
  yield buffer;
}
