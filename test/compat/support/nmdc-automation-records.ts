/**
 * Records that give nmdc_automation's calls something to find, written to the compat server beside
 * the generated ones. Identifiers follow the client's own fixtures and examples where its requests
 * name them (nmdc:omprc-11-dfzknb42, nmdc:omprc-12-hgksne68, nmdc:manif-11-abc12345,
 * nmdc:sty-11-28tm5d36, ...), so the client's own request lines can be sent as it writes them.
 */
import type { Doc } from '../../../src/store/port.ts';

/** The data generation the scheduler's examples are informed by. */
export const DG_MAIN = 'nmdc:omprc-11-dfzknb42';
/** A second generation of the scheduler's allowlist example; a pooled execution is informed by both. */
export const DG_ALLOWLISTED = 'nmdc:dgns-11-qmpge038';
/** The raw reads of DG_MAIN. */
export const DG_MAIN_READS = 'nmdc:dobj-11-ngnp0x38';
/** The data generation the importer maps (ImportMapper.data_generation_id). */
export const DG_IMPORT = 'nmdc:omprc-12-hgksne68';
/** The data generation whose has_output the importer's update query sets. */
export const DG_IMPORT_UPDATE = 'nmdc:omprc-12-upd00001';
/** The data object the importer's update query points that has_output at. */
export const IMPORTED_OBJECT = 'nmdc:dobj-11-abc12345';
/** The assembly whose statistics wdl/assembly_stats.wdl uploads. */
export const ASSEMBLY = 'nmdc:wfmgas-11-abc123.1';

/** A manifest of poolable replicates with more data objects than one aggregate batch (25) holds. */
export const POOL_MANIFEST = 'nmdc:manif-11-abc12345';
export const POOL_OBJECT_COUNT = 30;
/** A manifest of another category: the scheduler's manifest query skips it. */
export const RUN_MANIFEST = 'nmdc:manif-11-instrun1';
/** The two studies of the client's test_run_query aggregation. */
export const POOL_STUDY = 'nmdc:sty-11-pzmd0x14';
export const OTHER_POOL_STUDY = 'nmdc:sty-11-hht5sb92';

/** The study of the study report (run_report.py). */
export const REPORT_STUDY = 'nmdc:sty-11-aygzgv51';
/** The workflow types the study report requires by default (run_report.WF_TYPES). */
export const WF_TYPES = [
  'nmdc:ReadQcAnalysis',
  'nmdc:ReadBasedTaxonomyAnalysis',
  'nmdc:MetagenomeAssembly',
  'nmdc:MetagenomeAnnotation',
  'nmdc:MagsAnalysis',
];

/** The study the JGI staging scripts look up by proposal, and its proposal. */
export const GOLD_STUDY = 'nmdc:sty-11-28tm5d36';
export const GOLD_PROPOSAL = 'jgi.proposal:508306';

const URL_ROOT = 'https://data.microbiomedata.org/data/';
/** The biosample every added data generation sequenced. */
const BIOSAMPLE = 'nmdc:bsm-11-auto0001';
const TYPECODES: Record<string, string> = {
  'nmdc:ReadQcAnalysis': 'wfrqc',
  'nmdc:ReadBasedTaxonomyAnalysis': 'wfrbt',
  'nmdc:MetagenomeAssembly': 'wfmgas',
  'nmdc:MetagenomeAnnotation': 'wfmgan',
  'nmdc:MagsAnalysis': 'wfmag',
};
const GIT_URLS: Record<string, string> = {
  'nmdc:ReadQcAnalysis': 'https://github.com/microbiomedata/ReadsQC',
  'nmdc:ReadBasedTaxonomyAnalysis': 'https://github.com/microbiomedata/ReadbasedAnalysis',
  'nmdc:MetagenomeAssembly': 'https://github.com/microbiomedata/metaAssembly',
  'nmdc:MetagenomeAnnotation': 'https://github.com/microbiomedata/mg_annotation',
  'nmdc:MagsAnalysis': 'https://github.com/microbiomedata/metaMAGs',
};

function dataObject(id: string, type: string, extra: Record<string, unknown> = {}): Doc {
  const local = id.split(':')[1]!;
  return {
    id,
    type: 'nmdc:DataObject',
    name: `${local}.fastq.gz`,
    description: `${type} ${local}`,
    data_category: type.includes('Raw') ? 'instrument_data' : 'processed_data',
    data_object_type: type,
    file_size_bytes: 1000 + local.length * 7919,
    md5_checksum: 'd41d8cd98f00b204e9800998ecf8427e',
    url: `${URL_ROOT}${local}/${local}.fastq.gz`,
    ...extra,
  };
}

function generation(
  id: string,
  studies: string[],
  outputs: string[] | undefined,
  extra: Record<string, unknown> = {},
): Doc {
  const doc: Doc = {
    id,
    type: 'nmdc:NucleotideSequencing',
    name: `Sequencing ${id}`,
    analyte_category: 'metagenome',
    associated_studies: studies,
    has_input: [BIOSAMPLE],
    processing_institution: 'JGI',
    ...extra,
  };
  if (outputs) doc.has_output = outputs;
  return doc;
}

function execution(
  id: string,
  type: string,
  informedBy: string[],
  started: string,
  outputs: string[] = [],
  extra: Record<string, unknown> = {},
): Doc {
  const ended = new Date(Date.parse(started) + 3_600_000).toISOString();
  return {
    id,
    type,
    name: `${type.slice(5)} for ${informedBy.join(', ')}`,
    git_url: GIT_URLS[type],
    version: 'v1.0.28',
    processing_institution: 'NMDC',
    started_at_time: started,
    ended_at_time: ended,
    was_informed_by: informedBy,
    has_input: [],
    has_output: outputs,
    ...extra,
  };
}

const pad = (n: number) => String(n).padStart(2, '0');
export const POOL_OBJECTS = Array.from(
  { length: POOL_OBJECT_COUNT },
  (_, i) => `nmdc:dobj-11-mfst00${pad(i + 1)}`,
);

const studies: Doc[] = [
  // The study the automation biosample and data generations belong to.
  {
    id: 'nmdc:sty-11-main0001',
    type: 'nmdc:Study',
    name: 'Automation study',
    study_category: 'research_study',
  },
  {
    id: GOLD_STUDY,
    type: 'nmdc:Study',
    name: 'JGI proposal 508306 study',
    study_category: 'research_study',
    jgi_portal_study_identifiers: [GOLD_PROPOSAL],
  },
  {
    // A proposal number that starts like the one looked up: equality, not a prefix match.
    id: 'nmdc:sty-11-28tm0000',
    type: 'nmdc:Study',
    name: 'JGI proposal 5083060 study',
    study_category: 'research_study',
    jgi_portal_study_identifiers: [`${GOLD_PROPOSAL}0`],
  },
  { id: REPORT_STUDY, type: 'nmdc:Study', name: 'Study report study', study_category: 'research_study' },
  { id: POOL_STUDY, type: 'nmdc:Study', name: 'Pooled replicates study', study_category: 'research_study' },
  {
    id: OTHER_POOL_STUDY,
    type: 'nmdc:Study',
    name: 'Instrument run study',
    study_category: 'research_study',
  },
];

const manifests: Doc[] = [
  {
    id: POOL_MANIFEST,
    type: 'nmdc:Manifest',
    manifest_category: 'poolable_replicates',
    name: 'Pooled replicates',
  },
  {
    id: RUN_MANIFEST,
    type: 'nmdc:Manifest',
    manifest_category: 'instrument_run',
    name: 'One instrument run',
  },
];

/** The study report's data generations, each shaped to pass or fail one stage of its pipeline. */
const reportOutputs = (n: number) => [`nmdc:dobj-11-rep000${n}`];
const reportGenerations: Doc[] = [
  // 1 and 2: every required workflow type (complete).
  generation('nmdc:omprc-11-rep00001', [REPORT_STUDY], reportOutputs(1)),
  generation('nmdc:omprc-11-rep00002', [REPORT_STUDY], reportOutputs(2)),
  // 3: reads QC and assembly only (incomplete).
  generation('nmdc:omprc-11-rep00003', [REPORT_STUDY], reportOutputs(3)),
  // 4: no workflow execution yet.
  generation('nmdc:omprc-11-rep00004', [REPORT_STUDY], reportOutputs(4)),
  // 5: its output is in a manifest (pooled).
  generation('nmdc:omprc-11-rep00005', [REPORT_STUDY], reportOutputs(5)),
  // 6: no output at all.
  generation('nmdc:omprc-11-rep00006', [REPORT_STUDY], undefined),
  // 7: a metatranscriptome.
  generation('nmdc:omprc-11-rep00007', [REPORT_STUDY], reportOutputs(7), {
    analyte_category: 'metatranscriptome',
  }),
  // 8: a reads QC that failed quality control.
  generation('nmdc:omprc-11-rep00008', [REPORT_STUDY], reportOutputs(8)),
];
const reportExecutions: Doc[] = [
  ...[1, 2].flatMap((n) =>
    WF_TYPES.map((type, i) =>
      execution(
        `nmdc:${TYPECODES[type]}-11-rep0000${n}.1`,
        type,
        [`nmdc:omprc-11-rep0000${n}`],
        `2024-0${n}-1${i}T08:00:00Z`,
      ),
    ),
  ),
  execution(
    'nmdc:wfrqc-11-rep00003.1',
    'nmdc:ReadQcAnalysis',
    ['nmdc:omprc-11-rep00003'],
    '2024-03-01T08:00:00Z',
  ),
  execution(
    'nmdc:wfmgas-11-rep00003.1',
    'nmdc:MetagenomeAssembly',
    ['nmdc:omprc-11-rep00003'],
    '2024-03-02T08:00:00Z',
  ),
  execution(
    'nmdc:wfrqc-11-rep00005.1',
    'nmdc:ReadQcAnalysis',
    ['nmdc:omprc-11-rep00005'],
    '2024-05-01T08:00:00Z',
  ),
  execution(
    'nmdc:wfrqc-11-rep00008.1',
    'nmdc:ReadQcAnalysis',
    ['nmdc:omprc-11-rep00008'],
    '2024-08-01T08:00:00Z',
    [],
    {
      qc_status: 'fail',
      qc_comment: 'low read count',
    },
  ),
];
const reportObjects: Doc[] = [1, 2, 3, 4, 5, 7, 8].map((n) =>
  dataObject(
    `nmdc:dobj-11-rep000${n}`,
    'Metagenome Raw Reads',
    n === 5 ? { in_manifest: [RUN_MANIFEST] } : {},
  ),
);

export const AUTOMATION_RECORDS: Record<string, Doc[]> = {
  study_set: studies,
  biosample_set: [
    {
      id: BIOSAMPLE,
      type: 'nmdc:Biosample',
      name: 'Automation biosample',
      associated_studies: ['nmdc:sty-11-main0001'],
    },
  ],
  manifest_set: manifests,
  data_generation_set: [
    generation(DG_MAIN, ['nmdc:sty-11-main0001'], [DG_MAIN_READS], {
      gold_sequencing_project_identifiers: ['gold:Gp0500010'],
    }),
    generation(DG_ALLOWLISTED, ['nmdc:sty-11-main0001'], ['nmdc:dobj-11-qmpge038']),
    generation('nmdc:omprc-11-mtx00001', ['nmdc:sty-11-main0001'], ['nmdc:dobj-11-mtx00001'], {
      analyte_category: 'metatranscriptome',
    }),
    generation(DG_IMPORT, ['nmdc:sty-11-main0001'], ['nmdc:dobj-12-imprt001']),
    generation(DG_IMPORT_UPDATE, ['nmdc:sty-11-main0001'], ['nmdc:dobj-12-upd00001']),
    // Three generations pooled by one manifest, ten of its data objects each.
    ...[0, 1, 2].map((g) =>
      generation(`nmdc:omprc-11-pool000${g + 1}`, [POOL_STUDY], POOL_OBJECTS.slice(g * 10, g * 10 + 10)),
    ),
    generation(
      'nmdc:omprc-11-hht5dg01',
      [OTHER_POOL_STUDY],
      ['nmdc:dobj-11-instr001', 'nmdc:dobj-11-instr002'],
    ),
    generation('nmdc:omprc-11-hht5dg02', [OTHER_POOL_STUDY], ['nmdc:dobj-11-hht5plain']),
    ...reportGenerations,
    // The JGI staging lookups: two generations of the proposal's study, one of them without GOLD ids.
    generation('nmdc:omprc-11-gold0001', [GOLD_STUDY], ['nmdc:dobj-11-gold0001'], {
      gold_sequencing_project_identifiers: ['gold:Gp0500001'],
    }),
    generation('nmdc:omprc-11-gold0002', [GOLD_STUDY], ['nmdc:dobj-11-gold0002']),
    generation('nmdc:omprc-11-gold0003', ['nmdc:sty-11-28tm0000'], ['nmdc:dobj-11-gold0003'], {
      gold_sequencing_project_identifiers: ['gold:Gp0500003'],
    }),
  ],
  workflow_execution_set: [
    execution(
      'nmdc:wfrqc-11-xyz98765.1',
      'nmdc:ReadQcAnalysis',
      [DG_MAIN],
      '2024-12-10T18:10:31.830482+00:00',
      ['nmdc:dobj-11-xyzfilt1'],
    ),
    execution(
      'nmdc:wfrqc-11-xyz98765.2',
      'nmdc:ReadQcAnalysis',
      [DG_MAIN],
      '2025-01-15T09:00:00.000000+00:00',
      ['nmdc:dobj-11-xyzfilt2'],
    ),
    execution(
      ASSEMBLY,
      'nmdc:MetagenomeAssembly',
      [DG_MAIN],
      '2025-01-16T09:00:00.000000+00:00',
      ['nmdc:dobj-11-abccont1'],
      { has_input: [DG_MAIN_READS] },
    ),
    // A pooled reads QC informed by two generations: not equal to [DG_MAIN], but it contains it.
    execution(
      'nmdc:wfrqc-11-pooled01.1',
      'nmdc:ReadQcAnalysis',
      [DG_MAIN, DG_ALLOWLISTED],
      '2025-02-01T09:00:00Z',
    ),
    execution('nmdc:wfrqc-12-imprt001.1', 'nmdc:ReadQcAnalysis', [DG_IMPORT], '2025-03-01T09:00:00Z', [
      'nmdc:dobj-12-imprt002',
      'nmdc:dobj-12-imprt003',
    ]),
    execution('nmdc:wfmgas-12-imprt001.1', 'nmdc:MetagenomeAssembly', [DG_IMPORT], '2025-03-02T09:00:00Z', [
      'nmdc:dobj-12-imprt004',
    ]),
    ...reportExecutions,
  ],
  data_object_set: [
    dataObject(DG_MAIN_READS, 'Metagenome Raw Reads'),
    dataObject('nmdc:dobj-11-qmpge038', 'Metagenome Raw Read 1'),
    dataObject('nmdc:dobj-11-mtx00001', 'Metatranscriptome Raw Reads'),
    dataObject('nmdc:dobj-11-xyzfilt1', 'Filtered Sequencing Reads', {
      was_generated_by: 'nmdc:wfrqc-11-xyz98765.1',
    }),
    dataObject('nmdc:dobj-11-xyzfilt2', 'Filtered Sequencing Reads', {
      was_generated_by: 'nmdc:wfrqc-11-xyz98765.2',
    }),
    dataObject('nmdc:dobj-11-abccont1', 'Assembly Contigs', { was_generated_by: ASSEMBLY }),
    dataObject('nmdc:dobj-12-imprt001', 'Metagenome Raw Reads'),
    dataObject('nmdc:dobj-12-imprt002', 'Filtered Sequencing Reads'),
    dataObject('nmdc:dobj-12-imprt003', 'QC Statistics'),
    dataObject('nmdc:dobj-12-imprt004', 'Assembly Contigs'),
    dataObject('nmdc:dobj-12-upd00001', 'Metagenome Raw Reads'),
    dataObject(IMPORTED_OBJECT, 'Filtered Sequencing Reads'),
    ...POOL_OBJECTS.map((id) => dataObject(id, 'Metagenome Raw Reads', { in_manifest: [POOL_MANIFEST] })),
    dataObject('nmdc:dobj-11-instr001', 'Metagenome Raw Reads', { in_manifest: [RUN_MANIFEST] }),
    dataObject('nmdc:dobj-11-instr002', 'Metagenome Raw Reads', { in_manifest: [RUN_MANIFEST] }),
    dataObject('nmdc:dobj-11-hht5plain', 'Metagenome Raw Reads'),
    ...reportObjects,
    dataObject('nmdc:dobj-11-gold0001', 'Metagenome Raw Reads'),
    dataObject('nmdc:dobj-11-gold0002', 'Metagenome Raw Reads'),
    dataObject('nmdc:dobj-11-gold0003', 'Metagenome Raw Reads'),
    // db_tools.update_zero_size_files: a size missing, null or zero on a data portal URL ...
    dataObject('nmdc:dobj-11-zero0001', 'Assembly Contigs', { file_size_bytes: undefined }),
    dataObject('nmdc:dobj-11-zero0002', 'Assembly Contigs', { file_size_bytes: null }),
    dataObject('nmdc:dobj-11-zero0003', 'Assembly Contigs', { file_size_bytes: 0 }),
    // ... and neighbours it must leave out: another host, no URL, a real size.
    dataObject('nmdc:dobj-11-zero0004', 'Assembly Contigs', {
      file_size_bytes: 0,
      url: 'https://portal.nersc.gov/data/zero0004.fna',
    }),
    dataObject('nmdc:dobj-11-zero0005', 'Assembly Contigs', { file_size_bytes: 0, url: undefined }),
    dataObject('nmdc:dobj-11-zero0006', 'Assembly Contigs', { file_size_bytes: 12345 }),
    // db_tools.fix_data_object_urls: URLs with a /ficus/ segment, and one without.
    dataObject('nmdc:dobj-11-ficus001', 'Assembly Contigs', {
      url: `${URL_ROOT}nmdc:omprc-11-x/ficus/contigs.fna`,
    }),
    dataObject('nmdc:dobj-11-ficus002', 'Assembly Contigs', {
      url: 'https://nmdcdemo.emsl.pnnl.gov/ficus/nmdc:wfmgas-11-y.1/contigs.fna',
    }),
    dataObject('nmdc:dobj-11-ficus003', 'Assembly Contigs', { url: `${URL_ROOT}ficus-like/contigs.fna` }),
  ].map((doc) => JSON.parse(JSON.stringify(doc)) as Doc),
};
