/**
 * What a generation run produces, before any record is made: the options, the metagenome
 * pipeline's stages and their outputs, how the data object budget is spent (complete pipelines,
 * one partial, unlinked uploads), the study of each biosample, and the ids of every record.
 */
import { BLADE_ALPHABET, prng, blade } from './ids.ts';

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
export const STAGES: readonly Stage[] = [
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
export const STAGE_START: readonly number[] = STAGES.map(
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
export const stagesOf = (g: number) => STAGE_PATTERN[g % STAGE_PATTERN.length]!;
/** Data objects owned by the data generations before g (all complete). */
export const objectsBefore = (g: number) =>
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

export function planOf({ biosamples, dataObjects }: GenerateOptions): Plan {
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

export function validate(options: GenerateOptions): void {
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
export function studyOfBiosampleFn(options: GenerateOptions): (b: number) => number {
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
