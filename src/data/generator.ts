/**
 * Seeded generator of realistic NMDC-shaped records: studies, biosamples, sequencing data
 * generations, workflow executions and data objects, linked the way the real data is
 * (biosample -> study, data generation -> biosample, workflow -> data generation and its
 * data objects). Deterministic for a seed; records are produced lazily so millions of data
 * objects never sit in memory.
 */
import type { Doc } from '../store/port.ts';

export interface GenerateOptions {
  studies: number;
  biosamples: number;
  dataObjects: number;
  seed?: number;
}

export interface GeneratedRecord {
  collection: string;
  doc: Doc;
}

/** mulberry32: small, fast, good enough for test data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BLADE_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** A unique 8-character blade for index `n`, scrambled by the seed so ids look like real ones. */
function blade(n: number, salt: number): string {
  // An odd multiplier mod 2^40 is a bijection, so distinct n give distinct blades.
  let x = (BigInt(n) * 0x9e3779b97n + BigInt(salt)) & 0xffffffffffn;
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = BLADE_ALPHABET[Number(x & 31n)] + out;
    x >>= 5n;
  }
  return out;
}

interface EcosystemPath {
  ecosystem: string;
  ecosystem_category: string;
  ecosystem_type: string;
  ecosystem_subtype: string;
  specific_ecosystem: string;
  broad: [string, string];
  local: [string, string];
  medium: [string, string];
  words: string;
}

const ECOSYSTEMS: EcosystemPath[] = [
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Terrestrial',
    ecosystem_type: 'Soil',
    ecosystem_subtype: 'Loam',
    specific_ecosystem: 'Agricultural land',
    broad: ['ENVO:00000446', 'terrestrial biome'],
    local: ['ENVO:00000114', 'agricultural field'],
    medium: ['ENVO:00001998', 'soil'],
    words: 'Soil microbial communities from agricultural fields',
  },
  {
    ecosystem: 'Host-associated',
    ecosystem_category: 'Plants',
    ecosystem_type: 'Phyllosphere',
    ecosystem_subtype: 'Leaf',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000174', 'forest biome'],
    local: ['ENVO:01000245', 'plant-associated environment'],
    medium: ['PO:0025034', 'leaf'],
    words: 'Leaf surface microbiome of poplar trees',
  },
  {
    ecosystem: 'Host-associated',
    ecosystem_category: 'Plants',
    ecosystem_type: 'Rhizosphere',
    ecosystem_subtype: 'Soil',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000180', 'tundra biome'],
    local: ['ENVO:00005801', 'rhizosphere'],
    medium: ['ENVO:00005801', 'rhizosphere soil'],
    words: 'Rhizosphere soil microbial communities of switchgrass',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Aquatic',
    ecosystem_type: 'Freshwater',
    ecosystem_subtype: 'Lake',
    specific_ecosystem: 'Sediment',
    broad: ['ENVO:01000252', 'freshwater lake biome'],
    local: ['ENVO:00000020', 'lake'],
    medium: ['ENVO:00002007', 'sediment'],
    words: 'Freshwater lake sediment microbial communities',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Aquatic',
    ecosystem_type: 'Marine',
    ecosystem_subtype: 'Coastal',
    specific_ecosystem: 'Sediment',
    broad: ['ENVO:00000447', 'marine biome'],
    local: ['ENVO:00000303', 'coastal wetland'],
    medium: ['ENVO:00002007', 'sediment'],
    words: 'Coastal wetland sediment and water column metagenomes',
  },
  {
    ecosystem: 'Environmental',
    ecosystem_category: 'Terrestrial',
    ecosystem_type: 'Soil',
    ecosystem_subtype: 'Permafrost',
    specific_ecosystem: 'Unclassified',
    broad: ['ENVO:01000180', 'tundra biome'],
    local: ['ENVO:00000134', 'permafrost'],
    medium: ['ENVO:00005773', 'permafrost soil'],
    words: 'Permafrost soil carbon cycling microbial communities',
  },
];

const SITES: Array<[string, number, number]> = [
  ['USA: Michigan, Kellogg Biological Station', 42.41, -85.37],
  ['USA: Alaska, Toolik Lake', 68.63, -149.6],
  ['USA: Colorado, East River', 38.92, -106.95],
  ['USA: Washington, Columbia River', 46.37, -119.27],
  ['USA: Florida, Everglades', 25.32, -80.93],
  ['USA: Oregon, Willamette Valley', 44.94, -123.03],
  ['Canada: British Columbia, Vancouver Island', 49.65, -125.45],
  ['Australia: Northern Territory, Darwin', -12.46, 130.84],
  ['Germany: Saxony, Leipzig', 51.34, 12.37],
  ['Brazil: Amazonas, Manaus', -3.1, -60.02],
];

const PEOPLE = ['Kirsten Hofmockel', 'Janet Jansson', 'Emiley Eloe-Fadrosh', 'Mary Lipton', 'Chris Mungall', 'Wendy Brown'];
const FUNDERS = [
  'DOE Office of Biological and Environmental Research',
  'National Science Foundation',
  'DOE Joint Genome Institute Community Science Program',
  'EMSL User Program',
];

/** Data object types a workflow execution of each kind produces. */
const WORKFLOWS = [
  {
    typecode: 'wfrqc',
    type: 'nmdc:ReadQcAnalysis',
    name: 'Read QC Analysis',
    git: 'https://github.com/microbiomedata/ReadsQC',
    outputs: ['Filtered Sequencing Reads', 'QC Statistics'],
  },
  {
    typecode: 'wfmgas',
    type: 'nmdc:MetagenomeAssembly',
    name: 'Metagenome Assembly',
    git: 'https://github.com/microbiomedata/metaAssembly',
    outputs: ['Assembly Contigs', 'Assembly Scaffolds', 'Assembly AGP', 'Assembly Coverage Stats'],
  },
] as const;

export const GENERATED_COLLECTIONS = [
  'study_set',
  'biosample_set',
  'data_generation_set',
  'workflow_execution_set',
  'data_object_set',
] as const;

/** How many records of each collection a run produces. */
export function plannedCounts(options: GenerateOptions): Record<(typeof GENERATED_COLLECTIONS)[number], number> {
  const generations = dataGenerationCount(options);
  return {
    study_set: options.studies,
    biosample_set: options.biosamples,
    data_generation_set: generations,
    workflow_execution_set: generations * WORKFLOWS.length,
    data_object_set: options.dataObjects,
  };
}

function dataGenerationCount({ biosamples, dataObjects }: GenerateOptions): number {
  if (biosamples === 0 || dataObjects === 0) return 0;
  // About eight files per sequencing run: raw reads plus the workflow outputs.
  return Math.min(biosamples, Math.max(1, Math.ceil(dataObjects / 8)));
}

/** Yields every record, collection by collection in GENERATED_COLLECTIONS order. */
export function* generateRecords(options: GenerateOptions): Generator<GeneratedRecord> {
  const { studies, biosamples, dataObjects } = options;
  for (const [name, n] of Object.entries({ studies, biosamples, dataObjects })) {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer`);
  }
  if (biosamples > 0 && studies === 0) throw new RangeError('biosamples need at least one study');
  const seed = options.seed ?? 1;
  const salt = Math.floor(prng(seed)() * 2 ** 32);
  const G = dataGenerationCount(options);

  const studyId = (i: number) => `nmdc:sty-11-${blade(i, salt)}`;
  const biosampleId = (i: number) => `nmdc:bsm-11-${blade(i, salt)}`;
  const generationId = (g: number) => `nmdc:dgns-11-${blade(g, salt)}`;
  const workflowId = (g: number, w: number) => `nmdc:${WORKFLOWS[w]!.typecode}-11-${blade(g, salt)}.1`;
  const dataObjectId = (j: number) => `nmdc:dobj-11-${blade(j, salt)}`;
  const studyOfBiosample = (b: number) => b % studies;
  const ecosystemOfStudy = (s: number) => ECOSYSTEMS[s % ECOSYSTEMS.length]!;
  const siteOfStudy = (s: number) => SITES[(s * 3) % SITES.length]!;

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
        alternative_identifiers: [`gold:Gb0${100000 + b}`, `igsn:NMDC${blade(b, salt).toUpperCase()}`],
      },
    };
  }

  const dataObjectsOf = (g: number, w: number): number[] => {
    // Group g owns data objects g, g+G, g+2G, ...; the first is the raw reads, the rest
    // alternate between the group's workflow executions.
    const out: number[] = [];
    for (let k = 1, j = g + G; j < dataObjects; k++, j += G) if ((k - 1) % WORKFLOWS.length === w) out.push(j);
    return out;
  };

  for (let g = 0; g < G; g++) {
    const rnd = prng(seed * 3_000_017 + g);
    const b = g % biosamples;
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
        has_output: [dataObjectId(g)],
        processing_institution: 'JGI',
        start_date: start.toISOString().slice(0, 10),
        gold_sequencing_project_identifiers: [`gold:Gp0${100000 + g}`],
      },
    };
  }

  for (let g = 0; g < G; g++) {
    const rnd = prng(seed * 4_000_037 + g);
    const started = new Date(Date.UTC(2021 + Math.floor(rnd() * 3), Math.floor(rnd() * 12), 1 + Math.floor(rnd() * 28), 8));
    for (let w = 0; w < WORKFLOWS.length; w++) {
      const wf = WORKFLOWS[w]!;
      const ended = new Date(started.getTime() + (1 + w) * 3_600_000 * (1 + rnd() * 5));
      yield {
        collection: 'workflow_execution_set',
        doc: {
          id: workflowId(g, w),
          type: wf.type,
          name: `${wf.name} for ${generationId(g)}`,
          git_url: wf.git,
          version: `v1.${w}.${Math.floor(rnd() * 10)}`,
          started_at_time: started.toISOString(),
          ended_at_time: ended.toISOString(),
          was_informed_by: [generationId(g)],
          has_input: [dataObjectId(g)],
          has_output: dataObjectsOf(g, w).map(dataObjectId),
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
  for (let j = 0; j < dataObjects; j++) {
    const rnd = prng(seed * 5_000_011 + j);
    let dataObjectType: string;
    let generatedBy: string | undefined;
    let fileName: string;
    let category: string;
    if (G === 0) {
      dataObjectType = 'Metagenome Raw Reads';
      fileName = `reads_${j}.fastq.gz`;
      category = 'instrument_data';
    } else {
      const g = j % G;
      const k = Math.floor(j / G);
      if (k === 0) {
        dataObjectType = 'Metagenome Raw Reads';
        generatedBy = generationId(g);
        fileName = `${blade(g, salt)}.fastq.gz`;
        category = 'instrument_data';
      } else {
        const w = (k - 1) % WORKFLOWS.length;
        const outputs = WORKFLOWS[w]!.outputs;
        dataObjectType = outputs[Math.floor((k - 1) / WORKFLOWS.length) % outputs.length]!;
        generatedBy = workflowId(g, w);
        fileName = `${blade(g, salt)}_${dataObjectType.toLowerCase().replace(/ /g, '_')}_${k}.${k % 2 ? 'fna' : 'txt'}`;
        category = 'processed_data';
      }
    }
    const doc: Doc = {
      id: dataObjectId(j),
      type: 'nmdc:DataObject',
      name: fileName,
      description: `${dataObjectType} for ${generatedBy ?? 'an unlinked upload'}`,
      data_category: category,
      data_object_type: dataObjectType,
      file_size_bytes: Math.floor(1_000 + rnd() * 5e9),
      md5_checksum: hex(rnd),
      url: `https://data.microbiomedata.org/data/${generatedBy ?? 'uploads'}/${fileName}`,
    };
    if (generatedBy) doc.was_generated_by = generatedBy;
    yield { collection: 'data_object_set', doc };
  }
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
