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

export interface GenerateOptions {
  studies: number;
  biosamples: number;
  /**
   * Data objects in all. Each biosample gets at most one sequencing data generation whose
   * pipeline owns 26-31 data objects; the budget fills complete pipelines biosample by biosample
   * (the last one possibly cut short) and what is left are unlinked uploads.
   */
  dataObjects: number;
  seed?: number;
  /**
   * Skewed study sizes: study 0 holds exactly this many biosamples and the other studies share
   * the rest Zipf-like (see biosampleCountsByStudy). Absent: an even spread, biosample b in
   * study b % studies.
   */
  largestStudyBiosamples?: number;
  /**
   * Which ids: `demo` (the default) gives blades of 8 characters, as the demo data set has;
   * `distinct` blades of 9, so the records can never take the id of a demo record (or of a minted
   * id, whose blade has 8) whatever the seed: `npm run generate-data` writes these.
   */
  idSpace?: 'demo' | 'distinct';
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

const TWO_20 = 2 ** 20;
const TWO_40 = 2 ** 40;
const BLADE_MULTIPLIER = 0x9e3779b97;
const MULTIPLIER_LO = BLADE_MULTIPLIER % TWO_20;
const MULTIPLIER_HI = Math.floor(BLADE_MULTIPLIER / TWO_20);

/** A unique 8-character blade for index `n`, scrambled by the seed so ids look like real ones. */
function blade(n: number, salt: number): string {
  // An odd multiplier mod 2^40 is a bijection, so distinct n give distinct blades. Computed on
  // 20-bit halves, exact in doubles (the 2^40 term of hi * hi drops out mod 2^40).
  let x: number;
  if (n < TWO_40) {
    const lo = n % TWO_20;
    const hi = Math.floor(n / TWO_20);
    x = (lo * MULTIPLIER_LO + ((lo * MULTIPLIER_HI + hi * MULTIPLIER_LO) % TWO_20) * TWO_20 + salt) % TWO_40;
  } else {
    x = Number((BigInt(n) * BigInt(BLADE_MULTIPLIER) + BigInt(salt)) & 0xffffffffffn);
  }
  const top = Math.floor(x / TWO_20);
  const bottom = x % TWO_20;
  return (
    BLADE_ALPHABET[(top >>> 15) & 31]! +
    BLADE_ALPHABET[(top >>> 10) & 31]! +
    BLADE_ALPHABET[(top >>> 5) & 31]! +
    BLADE_ALPHABET[top & 31]! +
    BLADE_ALPHABET[(bottom >>> 15) & 31]! +
    BLADE_ALPHABET[(bottom >>> 10) & 31]! +
    BLADE_ALPHABET[(bottom >>> 5) & 31]! +
    BLADE_ALPHABET[bottom & 31]!
  );
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

/** A data object a workflow writes: its `data_object_type` and the file name's ending. */
interface Output {
  type: string;
  file: string;
}

/** One kind of workflow execution in the metagenome pipeline. */
interface Stage {
  typecode: string;
  type: string;
  name: string;
  git: string;
  version: string;
  /** Hours it runs, at least. */
  hours: number;
  /** What it reads: [stage, output index] of earlier stages; stage -1 is the raw reads. */
  inputs: ReadonlyArray<readonly [number, number]>;
  outputs: readonly Output[];
}

/**
 * The metagenome pipeline run on every sequencing data generation, in order: each stage reads
 * outputs of earlier ones (reads QC the raw reads; taxonomy and assembly the filtered reads;
 * annotation and binning the assembly), as NMDC's workflow automation chains them.
 */
const STAGES: readonly Stage[] = [
  {
    typecode: 'wfrqc',
    type: 'nmdc:ReadQcAnalysis',
    name: 'Read QC Analysis',
    git: 'https://github.com/microbiomedata/ReadsQC',
    version: 'v1.0.14',
    hours: 1,
    inputs: [[-1, 0]],
    outputs: [
      { type: 'Filtered Sequencing Reads', file: 'filtered.fastq.gz' },
      { type: 'QC Statistics', file: 'filterStats.txt' },
      { type: 'QC Statistics Extended', file: 'filterStats2.txt' },
      { type: 'Read Filtering Info File', file: 'readsQC.info' },
    ],
  },
  {
    typecode: 'wfrbt',
    type: 'nmdc:ReadBasedTaxonomyAnalysis',
    name: 'Read Based Taxonomy Analysis',
    git: 'https://github.com/microbiomedata/ReadbasedAnalysis',
    version: 'v1.0.10',
    hours: 2,
    inputs: [[0, 0]],
    outputs: [
      { type: 'GOTTCHA2 Classification Report', file: 'gottcha2_report.tsv' },
      { type: 'GOTTCHA2 Report Full', file: 'gottcha2_full.tsv' },
      { type: 'GOTTCHA2 Krona Plot', file: 'gottcha2_krona.html' },
      { type: 'Kraken2 Classification Report', file: 'kraken2_report.tsv' },
      { type: 'Kraken2 Taxonomic Classification', file: 'kraken2_classification.tsv' },
      { type: 'Kraken2 Krona Plot', file: 'kraken2_krona.html' },
      { type: 'Read Based Analysis Info File', file: 'profiler.info' },
    ],
  },
  {
    typecode: 'wfmgas',
    type: 'nmdc:MetagenomeAssembly',
    name: 'Metagenome Assembly',
    git: 'https://github.com/microbiomedata/metaAssembly',
    version: 'v1.0.9',
    hours: 6,
    inputs: [[0, 0]],
    outputs: [
      { type: 'Assembly Contigs', file: 'contigs.fna' },
      { type: 'Assembly Scaffolds', file: 'scaffolds.fna' },
      { type: 'Assembly Coverage Stats', file: 'covstats.txt' },
      { type: 'Assembly AGP', file: 'assembly.agp' },
      { type: 'Assembly Coverage BAM', file: 'pairedMapped_sorted.bam' },
      { type: 'Assembly Info File', file: 'metaAsm.info' },
    ],
  },
  {
    typecode: 'wfmgan',
    type: 'nmdc:MetagenomeAnnotation',
    name: 'Metagenome Annotation',
    git: 'https://github.com/microbiomedata/mg_annotation',
    version: 'v1.1.4',
    hours: 4,
    inputs: [[2, 0]],
    outputs: [
      { type: 'Annotation Amino Acid FASTA', file: 'proteins.faa' },
      { type: 'Structural Annotation GFF', file: 'structural_annotation.gff' },
      { type: 'Functional Annotation GFF', file: 'functional_annotation.gff' },
      { type: 'Annotation KEGG Orthology', file: 'ko.tsv' },
      { type: 'Annotation Enzyme Commission', file: 'ec.tsv' },
      { type: 'Clusters of Orthologous Groups (COG) Annotation GFF', file: 'cog.gff' },
      { type: 'Pfam Annotation GFF', file: 'pfam.gff' },
      { type: 'Annotation Statistics', file: 'stats.tsv' },
    ],
  },
  {
    typecode: 'wfmag',
    type: 'nmdc:MagsAnalysis',
    name: 'Metagenome Assembled Genomes Analysis',
    git: 'https://github.com/microbiomedata/metaMAGs',
    version: 'v1.3.12',
    hours: 3,
    // Binning reads the contigs, the reads mapped onto them and the functional annotation.
    inputs: [
      [2, 0],
      [2, 4],
      [3, 2],
    ],
    outputs: [
      { type: 'Metagenome HQMQ Bins Compression File', file: 'hqmq_bin.zip' },
      { type: 'Metagenome LQ Bins Compression File', file: 'lq_bin.zip' },
      { type: 'CheckM Statistics', file: 'checkm_qa.out' },
      { type: 'GTDBTK Bacterial Summary', file: 'gtdbtk.bac120.summary.tsv' },
      { type: 'Metagenome Bins Info File', file: 'bin.info' },
    ],
  },
];

/** Where each stage's outputs start among its data generation's data objects (0 is the raw reads). */
const STAGE_START: readonly number[] = STAGES.map(
  (_, s) => 1 + STAGES.slice(0, s).reduce((n, st) => n + st.outputs.length, 0),
);

/**
 * How many stages (a prefix of STAGES) data generation g runs, by g % 4: one in four
 * assemblies yields too little for binning, so its pipeline stops after annotation.
 */
const STAGE_PATTERN = [5, 5, 4, 5] as const;
const objectsOfStages = (stages: number) => (stages === 0 ? 1 : STAGE_START[stages - 1]! + STAGES[stages - 1]!.outputs.length);
const PATTERN_OBJECTS = STAGE_PATTERN.map(objectsOfStages);
const CYCLE_OBJECTS = PATTERN_OBJECTS.reduce((a, b) => a + b, 0);
const CYCLE_STAGES = STAGE_PATTERN.reduce((a: number, b) => a + b, 0);
const prefixSums = (xs: readonly number[]) => xs.map((_, i) => xs.slice(0, i).reduce((a, b) => a + b, 0));
const PATTERN_OBJECTS_BEFORE = prefixSums(PATTERN_OBJECTS);
const PATTERN_STAGES_BEFORE = prefixSums(STAGE_PATTERN);

/** Stages of a complete pipeline of data generation g. */
const stagesOf = (g: number) => STAGE_PATTERN[g % STAGE_PATTERN.length]!;
/** Data objects owned by the data generations before g (all complete). */
const objectsBefore = (g: number) =>
  Math.floor(g / STAGE_PATTERN.length) * CYCLE_OBJECTS + PATTERN_OBJECTS_BEFORE[g % STAGE_PATTERN.length]!;
/** Workflow executions of the data generations before g (all complete). */
const stagesBefore = (g: number) =>
  Math.floor(g / STAGE_PATTERN.length) * CYCLE_STAGES + PATTERN_STAGES_BEFORE[g % STAGE_PATTERN.length]!;

/**
 * How the data object budget is spent: `complete` data generations (at most one per biosample)
 * each own their raw reads and every output of their pipeline; if data objects are left and a
 * biosample has none yet, one more data generation runs as many stages as fit whole
 * (`partialStages`); what is still left are unlinked uploads.
 */
interface Plan {
  complete: number;
  partialStages: number | undefined;
  generations: number;
  workflows: number;
  linkedObjects: number;
}

function planOf({ biosamples, dataObjects }: GenerateOptions): Plan {
  if (biosamples <= 0 || dataObjects <= 0)
    return { complete: 0, partialStages: undefined, generations: 0, workflows: 0, linkedObjects: 0 };
  let complete = Math.min(biosamples, Math.floor(dataObjects / CYCLE_OBJECTS) * STAGE_PATTERN.length);
  while (complete < biosamples && objectsBefore(complete + 1) <= dataObjects) complete++;
  let linkedObjects = objectsBefore(complete);
  let workflows = stagesBefore(complete);
  let partialStages: number | undefined;
  if (complete < biosamples && linkedObjects < dataObjects) {
    let room = dataObjects - linkedObjects - 1;
    partialStages = 0;
    while (partialStages < STAGES.length && STAGES[partialStages]!.outputs.length <= room)
      room -= STAGES[partialStages++]!.outputs.length;
    linkedObjects = dataObjects - room;
    workflows += partialStages;
  }
  return { complete, partialStages, generations: complete + (partialStages === undefined ? 0 : 1), workflows, linkedObjects };
}

export const GENERATED_COLLECTIONS = [
  'study_set',
  'biosample_set',
  'data_generation_set',
  'workflow_execution_set',
  'data_object_set',
] as const;

/** How many records of each collection a run produces. */
export function plannedCounts(options: GenerateOptions): Record<(typeof GENERATED_COLLECTIONS)[number], number> {
  const plan = planOf(options);
  return {
    study_set: options.studies,
    biosample_set: options.biosamples,
    data_generation_set: plan.generations,
    workflow_execution_set: plan.workflows,
    data_object_set: options.dataObjects,
  };
}

/** Zipf exponent of the studies other than the largest, when study sizes are skewed. */
const ZIPF_EXPONENT = 1;

/**
 * Biosamples per study, in study order. Even spread by default (biosample b belongs to study
 * b % studies); with `largestStudyBiosamples`, study 0 holds that many and the others share the
 * rest Zipf-like (the k-th of them in proportion to 1/k), each at least one while there are
 * enough and none more than the largest. O(studies) memory.
 */
export function biosampleCountsByStudy(options: GenerateOptions): number[] {
  validate(options);
  const { studies: S, biosamples: N, largestStudyBiosamples: L } = options;
  if (L === undefined) return Array.from({ length: S }, (_, s) => Math.floor(N / S) + (s < N % S ? 1 : 0));
  if (S === 0) return [];
  const counts = new Array<number>(S).fill(0);
  counts[0] = L;
  const rest = N - L;
  if (rest <= S - 1) {
    for (let s = 1; s <= rest; s++) counts[s] = 1;
    return counts;
  }
  for (let s = 1; s < S; s++) counts[s] = 1;
  // Share what is left over the one each by weight 1/k^a, capping at the largest study's size
  // (water-filling: a capped study's excess goes to the uncapped ones), then round so the
  // shares add up exactly (largest remainders first).
  const cap = L - 1;
  const weight = (s: number) => 1 / s ** ZIPF_EXPONENT;
  const share = new Array<number>(S).fill(0);
  const capped = new Array<boolean>(S).fill(false);
  let left = rest - (S - 1);
  for (;;) {
    let total = 0;
    for (let s = 1; s < S; s++) if (!capped[s]) total += weight(s);
    let changed = false;
    for (let s = 1; s < S; s++) {
      if (capped[s]) continue;
      share[s] = (left * weight(s)) / total;
      if (share[s]! > cap) {
        capped[s] = true;
        changed = true;
      }
    }
    if (!changed) break;
    left = rest - (S - 1);
    for (let s = 1; s < S; s++) if (capped[s]) left -= (share[s] = cap);
  }
  let assigned = 0;
  for (let s = 1; s < S; s++) assigned += Math.floor(share[s]!);
  const byRemainder = Array.from({ length: S - 1 }, (_, i) => i + 1).sort(
    (a, b) => share[b]! - Math.floor(share[b]!) - (share[a]! - Math.floor(share[a]!)) || a - b,
  );
  let extra = rest - (S - 1) - assigned;
  for (const s of byRemainder) counts[s]! += Math.floor(share[s]!) + (extra-- > 0 ? 1 : 0);
  return counts;
}

/** The generated id of the study whose biosample count is nearest `n` (the first such study). */
export function studyIdWithBiosamples(options: GenerateOptions, n: number): string | undefined {
  const counts = biosampleCountsByStudy(options);
  let best = -1;
  for (let s = 0; s < counts.length; s++)
    if (best < 0 || Math.abs(counts[s]! - n) < Math.abs(counts[best]! - n)) best = s;
  return best < 0 ? undefined : generatedIds(options.seed, options.idSpace).study(best);
}

/**
 * Ids of the generated records for a seed, by index (the same ids generateRecords gives). In the
 * `distinct` space every blade has a ninth character, so no id equals one of the `demo` space.
 */
export function generatedIds(seed = 1, idSpace: GenerateOptions['idSpace'] = 'demo') {
  const salt = Math.floor(prng(seed)() * 2 ** 32);
  const bladeOf =
    idSpace === 'distinct'
      ? (n: number) => blade(n, salt) + BLADE_ALPHABET[(n * 7 + salt) % 32]!
      : (n: number) => blade(n, salt);
  return {
    study: (s: number) => `nmdc:sty-11-${bladeOf(s)}`,
    biosample: (b: number) => `nmdc:bsm-11-${bladeOf(b)}`,
    /** The data generation of biosample g (there is at most one per biosample). */
    dataGeneration: (g: number) => `nmdc:dgns-11-${bladeOf(g)}`,
    /** Stage `stage` (0 reads QC ... 4 binning) of data generation g's pipeline. */
    workflowExecution: (g: number, stage: number) => `nmdc:${STAGES[stage]!.typecode}-11-${bladeOf(g)}.1`,
    dataObject: (j: number) => `nmdc:dobj-11-${bladeOf(j)}`,
    /** The blade alone, as in file names. */
    blade: bladeOf,
  };
}

function validate(options: GenerateOptions): void {
  const { studies, biosamples, dataObjects, largestStudyBiosamples: largest } = options;
  for (const [name, n] of Object.entries({ studies, biosamples, dataObjects })) {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer`);
  }
  if (biosamples > 0 && studies === 0) throw new RangeError('biosamples need at least one study');
  if (largest === undefined) return;
  if (!Number.isInteger(largest) || largest < 0 || largest > biosamples)
    throw new RangeError('largestStudyBiosamples must be an integer from 0 to biosamples');
  if (studies > 0 && biosamples - largest > (studies - 1) * largest)
    throw new RangeError(
      `largestStudyBiosamples ${largest} is too small: ${studies} studies cannot hold ${biosamples} biosamples`,
    );
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * Study of each biosample, O(studies) memory. Even spread: b % studies. Skewed: the studies'
 * biosamples are consecutive blocks of a scrambled order (b * A mod N for an A coprime to N),
 * so the biosamples with data generations, the first ones, fall in every study alike.
 */
function studyOfBiosampleFn(options: GenerateOptions): (b: number) => number {
  const { studies, biosamples: N } = options;
  if (options.largestStudyBiosamples === undefined) return (b) => b % studies;
  const counts = biosampleCountsByStudy(options);
  const starts = new Float64Array(counts.length + 1);
  for (let s = 0; s < counts.length; s++) starts[s + 1] = starts[s]! + counts[s]!;
  let a = Math.max(1, Math.round(N * 0.6180339887));
  while (gcd(a, N) !== 1) a++;
  const exact = N < 2 ** 26;
  const scrambled = (b: number) => (exact ? (b * a) % N : Number((BigInt(b) * BigInt(a)) % BigInt(N)));
  return (b) => {
    const p = scrambled(b);
    let lo = 0;
    let hi = counts.length - 1;
    // The last study whose block starts at or before p.
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= p) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
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
