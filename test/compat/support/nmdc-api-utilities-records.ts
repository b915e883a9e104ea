/**
 * Records the Python client's own tests and examples ask for, added to the generated ones: the
 * study, biosamples, data objects and instrument ids its tests name; biosamples with lat_lon around
 * the Fairbanks record its proximity test starts from, on Null Island and on exact bounds; names
 * with `°C`, typographic apostrophes, dashes and accents for its regex escaping; more than 100
 * Direct Infusion data objects with the workflow executions that produced them (its notebook test);
 * a few records in every collection a search class of the client reads; and the provenance its
 * linked-instances and data-objects-for-study calls walk (the Columbia River study's samples,
 * sequencing runs, workflows and files, and a campaign the Fairbanks study is part of).
 */
import { createHash } from 'node:crypto';
import type { Doc } from '../../../src/store/port.ts';

const pad = (n: number, width: number) => String(n).padStart(width, '0');

export const LUQUILLO_STUDY_ID = 'nmdc:sty-11-8fb6t785';
export const LUQUILLO_STUDY_NAME =
  'Lab enrichment of tropical soil microbial communities from Luquillo Experimental Forest, Puerto Rico';
export const RIVER_STUDY_ID = 'nmdc:sty-11-aygzgv51';
export const FAIRBANKS_STUDY_ID = 'nmdc:sty-11-8ws97026';
/** The campaign the Fairbanks study is `part_of`. */
export const BOREAL_CAMPAIGN_ID = 'nmdc:sty-11-brl00001';

const study = (id: string, name: string, extra: Record<string, unknown> = {}): Doc => ({
  id,
  type: 'nmdc:Study',
  name,
  study_category: 'research_study',
  ecosystem_category: 'Terrestrial',
  ...extra,
});

/** Study names with characters the client escapes and PCRE reads as themselves. */
export const UNICODE_STUDIES: Doc[] = [
  study('nmdc:sty-11-c25d0001', 'Soil cores incubated at 25 °C for 30 days'),
  study('nmdc:sty-11-c35d0001', 'Soil cores incubated at 35 °C for 30 days'),
  study('nmdc:sty-11-frmr0001', 'Farmer’s field tillage trial at Kellogg Biological Station'),
  study('nmdc:sty-11-frmr0002', "Farmer's field cover crop trial, straight apostrophe"),
  study('nmdc:sty-11-strd0001', 'Stordalen Mire permafrost thaw gradient – palsa, bog and fen'),
  study('nmdc:sty-11-cafe0001', 'Soil microbiomes of café plantations in Huila, Colombia'),
];

const STUDIES: Doc[] = [
  study(LUQUILLO_STUDY_ID, LUQUILLO_STUDY_NAME, { ecosystem_type: 'Soil' }),
  study(RIVER_STUDY_ID, 'Riverbed sediment microbial communities of the Columbia River, Washington', {
    ecosystem_category: 'Aquatic',
  }),
  // Part of a campaign: the client's own test expects two studies upstream of its biosamples.
  study(FAIRBANKS_STUDY_ID, 'Boreal forest soil microbiomes near Fairbanks, Alaska', {
    part_of: [BOREAL_CAMPAIGN_ID],
  }),
  study(BOREAL_CAMPAIGN_ID, 'Interior Alaska boreal soils campaign'),
  ...UNICODE_STUDIES,
  // Enough studies for the client's "more than 32 studies" expectation and several pages of 20.
  ...Array.from({ length: 40 }, (_, i) =>
    study(`nmdc:sty-11-svy${pad(i, 5)}`, `Watershed function survey site ${i}`, {
      ecosystem_category: i % 2 ? 'Aquatic' : 'Terrestrial',
    }),
  ),
];

/** The center of the client's proximity test, and the record it starts from. */
export const FAIRBANKS = { id: 'nmdc:bsm-11-7bk7nf04', latitude: 63.875088, longitude: -149.210438 };

/** The 18 biosample ids of the client's check_ids_exist test (its first three appear in other tests). */
export const LIBRARY_BIOSAMPLE_IDS = [
  'nmdc:bsm-11-002vgm56',
  'nmdc:bsm-11-006pnx90',
  'nmdc:bsm-11-00dkyf35',
  'nmdc:bsm-11-00hrxp98',
  'nmdc:bsm-11-00m15h97',
  'nmdc:bsm-11-00yhef97',
  'nmdc:bsm-11-011z7z70',
  'nmdc:bsm-11-0169zs66',
  'nmdc:bsm-11-01bbrr08',
  'nmdc:bsm-11-01f6m423',
  'nmdc:bsm-11-01g9wf51',
  'nmdc:bsm-11-01teww33',
  'nmdc:bsm-11-024rsd62',
  'nmdc:bsm-11-02kcw433',
  'nmdc:bsm-11-02n85875',
  'nmdc:bsm-11-02v78297',
  'nmdc:bsm-11-02x97z84',
  'nmdc:bsm-11-034x5t48',
];
export const G6R2_NAME = 'G6R2_NF_20JUN2016';

const latLon = (latitude: number, longitude: number) => ({
  has_raw_value: `${latitude} ${longitude}`,
  latitude,
  longitude,
  type: 'nmdc:GeolocationValue',
});

const biosample = (id: string, name: string, extra: Record<string, unknown> = {}): Doc => ({
  id,
  type: 'nmdc:Biosample',
  name,
  associated_studies: [FAIRBANKS_STUDY_ID],
  ecosystem_category: 'Terrestrial',
  ...extra,
});

/**
 * Offsets from the Fairbanks center, in degrees: the first ten lie within 1 km, the next four in
 * the corners of the 1 km bounding box (outside the circle), the last four a few km away.
 */
const FAIRBANKS_OFFSETS: Array<[number, number]> = [
  [0.001, 0.002],
  [-0.002, 0.001],
  [0.003, -0.004],
  [-0.004, -0.003],
  [0.0005, 0.006],
  [-0.001, -0.007],
  [0.006, 0.0],
  [-0.006, 0.001],
  [0.002, 0.009],
  [-0.003, -0.01],
  [0.0085, 0.019],
  [-0.0085, 0.019],
  [0.0085, -0.019],
  [-0.0085, -0.019],
  [0.05, 0.1],
  [-0.05, 0.1],
  [0.05, -0.1],
  [-0.05, -0.1],
];

const BIOSAMPLES: Doc[] = [
  biosample(FAIRBANKS.id, 'Fairbanks boreal soil core 0', {
    lat_lon: latLon(FAIRBANKS.latitude, FAIRBANKS.longitude),
  }),
  ...LIBRARY_BIOSAMPLE_IDS.map((id, i) => {
    const [dLat, dLon] = FAIRBANKS_OFFSETS[i]!;
    const latitude = Math.round((FAIRBANKS.latitude + dLat) * 1e6) / 1e6;
    const longitude = Math.round((FAIRBANKS.longitude + dLon) * 1e6) / 1e6;
    return biosample(id, id === 'nmdc:bsm-11-006pnx90' ? G6R2_NAME : `Fairbanks boreal soil core ${i + 1}`, {
      lat_lon: latLon(latitude, longitude),
    });
  }),
  // Null Island, and a record just outside a 0.1 m box around it.
  biosample('nmdc:bsm-11-n0000000', 'Gulf of Guinea water sample at 0, 0', { lat_lon: latLon(0, 0) }),
  biosample('nmdc:bsm-11-n0000001', 'Gulf of Guinea water sample 1 m north', { lat_lon: latLon(0.00001, 0) }),
  // Exactly on the bounds of the client's lat/long example (gte 45, lte -120.5).
  biosample('nmdc:bsm-11-b0rder45', 'Columbia Plateau soil on the 45th parallel', {
    lat_lon: latLon(45, -120.5),
  }),
  // No coordinates, and coordinates only as raw text.
  biosample('nmdc:bsm-11-n0coord1', 'Sample with no recorded location'),
  biosample('nmdc:bsm-11-rawonly1', 'Sample with only a raw location', {
    lat_lon: { has_raw_value: '63.9 -149.2', type: 'nmdc:GeolocationValue' },
  }),
  biosample('nmdc:bsm-11-c25d0001', 'Soil core 3 incubated at 25 °C'),
  biosample('nmdc:bsm-11-c35d0001', 'Soil core 4 incubated at 35 °C'),
  biosample('nmdc:bsm-11-frmr0001', 'Farmer’s field plot 7 (tilled)'),
  biosample('nmdc:bsm-11-strd0001', 'Stordalen Mire – palsa core 2'),
  biosample('nmdc:bsm-11-cafe0001', 'Café plantation soil, shade-grown'),
  // Plant-associated samples: with the generated ones, more than one page of 50.
  ...Array.from({ length: 45 }, (_, i) =>
    biosample(`nmdc:bsm-11-rz${pad(i, 6)}`, `Switchgrass rhizosphere soil R${i}`, {
      associated_studies: [RIVER_STUDY_ID],
      ecosystem_category: 'Plants',
      lat_lon: latLon(44.5 + i / 1000, -123.1 - i / 1000),
    }),
  ),
];

export const AGILENT_ID = 'nmdc:inst-14-fas8ny90';
const INSTRUMENTS: Doc[] = [
  { id: AGILENT_ID, type: 'nmdc:Instrument', name: 'Agilent 7980A GC-MS', vendor: 'agilent' },
  { id: 'nmdc:inst-14-mwrrj632', type: 'nmdc:Instrument', name: 'Bruker 12T FT-ICR MS', vendor: 'bruker' },
  {
    id: 'nmdc:inst-14-xz5tb342',
    type: 'nmdc:Instrument',
    name: 'Thermo Orbitrap Exploris 480',
    vendor: 'thermo',
  },
];

export const DIRECT_INFUSION = 'Direct Infusion FT-ICR MS Analysis Results';
export const DIRECT_INFUSION_IDS = Array.from({ length: 130 }, (_, i) => `nmdc:dobj-13-di${pad(i, 6)}`);
const nomAnalysisId = (i: number, run: number) => `nmdc:wfnom-13-di${pad(i, 6)}.${run}`;

const DATA_OBJECTS: Doc[] = [
  ...DIRECT_INFUSION_IDS.map((id, i) => ({
    id,
    type: 'nmdc:DataObject',
    name: `Brodie_${i}_DI_FTICR.csv`,
    data_object_type: DIRECT_INFUSION,
    data_category: 'processed_data',
    file_size_bytes: 20_000 + i,
    md5_checksum: pad(i, 32),
    url: `https://nmdcdemo.emsl.pnnl.gov/nom/results/Brodie_${i}_DI_FTICR.csv`,
    was_generated_by: nomAnalysisId(i, 1),
  })),
  {
    id: 'nmdc:dobj-13-diqc0001',
    type: 'nmdc:DataObject',
    name: 'DI_FTICR_QC.csv',
    data_object_type: 'direct infusion FT-ICR MS analysis results (QC)',
    url: 'https://nmdcdemo.emsl.pnnl.gov/nom/results/DI_FTICR_QC.csv',
  },
  {
    id: 'nmdc:dobj-13-diraw001',
    type: 'nmdc:DataObject',
    name: 'Brodie_0_DI_FTICR.raw',
    data_object_type: 'Direct Infusion FT-ICR MS Raw Data',
    url: 'https://nmdcdemo.emsl.pnnl.gov/nom/raw/Brodie_0_DI_FTICR.raw',
  },
  { id: 'nmdc:dobj-11-0001ab10', type: 'nmdc:DataObject', name: 'nmdc_0001ab10_contigs.fna' },
  { id: 'nmdc:dobj-11-00095294', type: 'nmdc:DataObject', name: 'nmdc_00095294_filtered.fastq.gz' },
];

/** Every Direct Infusion object has a NOM analysis; every tenth was analysed twice. */
const WORKFLOW_EXECUTIONS: Doc[] = DIRECT_INFUSION_IDS.flatMap((id, i) =>
  (i % 10 === 0 ? [1, 2] : [1]).map((run) => ({
    id: nomAnalysisId(i, run),
    type: 'nmdc:NomAnalysis',
    name: `NOM analysis ${run} of Brodie_${i}`,
    has_input: ['nmdc:dobj-13-diraw001'],
    has_output: [id],
    was_informed_by: ['nmdc:dgms-13-di000000'],
  })),
);

/**
 * The lineage of the Columbia River study (`get_data_objects_for_study("nmdc:sty-11-aygzgv51")`):
 * three rhizosphere samples sequenced one run each, two more pooled, extracted and sequenced
 * together; each run's raw reads quality-filtered and assembled. The study's other samples have no
 * data yet, so they are in no group.
 */
export const RIVER_SEQUENCED = [0, 1, 2].map(rhizosphereId);
export const RIVER_POOLED = [3, 4].map(rhizosphereId);

function rhizosphereId(i: number): string {
  return `nmdc:bsm-11-rz${pad(i, 6)}`;
}

const RIVER_LINEAGE: Record<string, Doc[]> = (() => {
  const data_generation_set: Doc[] = [];
  const workflow_execution_set: Doc[] = [];
  const data_object_set: Doc[] = [];
  const file = (id: string, type: string, producer: string, category = 'processed_data'): Doc => {
    const name = `${id.slice(5)}_${type.toLowerCase().replace(/\W+/g, '_')}`;
    return {
      id,
      type: 'nmdc:DataObject',
      name,
      description: `${type} for ${producer}`,
      data_object_type: type,
      data_category: category,
      file_size_bytes: 1_000_000 + id.length * 7919,
      md5_checksum: createHash('md5').update(id).digest('hex'),
      url: `https://data.microbiomedata.org/data/${producer}/${name}`,
      was_generated_by: producer,
    };
  };
  const inputs: string[][] = [...RIVER_SEQUENCED.map((b) => [b]), ['nmdc:procsm-11-rvrdna01']];
  for (const [run, input] of inputs.entries()) {
    const generation = `nmdc:dgns-11-rvr0000${run}`;
    const readQc = `nmdc:wfrqc-11-rvr0000${run}.1`;
    const assembly = `nmdc:wfmgas-11-rvr0000${run}.1`;
    const raw = `nmdc:dobj-11-rvr${run}rds`;
    const filtered = `nmdc:dobj-11-rvr${run}flt`;
    data_generation_set.push({
      id: generation,
      type: 'nmdc:NucleotideSequencing',
      name: `Metagenome sequencing of Columbia River rhizosphere run ${run}`,
      analyte_category: 'metagenome',
      associated_studies: [RIVER_STUDY_ID],
      has_input: input,
      has_output: [raw],
      processing_institution: 'JGI',
    });
    data_object_set.push(
      file(raw, 'Metagenome Raw Reads', generation, 'instrument_data'),
      file(filtered, 'Filtered Sequencing Reads', readQc),
      file(`nmdc:dobj-11-rvr${run}qcs`, 'QC Statistics', readQc),
      file(`nmdc:dobj-11-rvr${run}ctg`, 'Assembly Contigs', assembly),
      file(`nmdc:dobj-11-rvr${run}sca`, 'Assembly Scaffolds', assembly),
    );
    workflow_execution_set.push(
      {
        id: readQc,
        type: 'nmdc:ReadQcAnalysis',
        name: `Read QC of ${generation}`,
        version: 'v1.0.8',
        was_informed_by: [generation],
        has_input: [raw],
        has_output: [filtered, `nmdc:dobj-11-rvr${run}qcs`],
        started_at_time: '2024-06-03T08:00:00Z',
        ended_at_time: '2024-06-03T09:30:00Z',
      },
      {
        id: assembly,
        type: 'nmdc:MetagenomeAssembly',
        name: `Assembly of ${generation}`,
        version: 'v1.0.7',
        was_informed_by: [generation],
        has_input: [filtered],
        has_output: [`nmdc:dobj-11-rvr${run}ctg`, `nmdc:dobj-11-rvr${run}sca`],
        started_at_time: '2024-06-03T10:00:00Z',
        ended_at_time: '2024-06-03T16:00:00Z',
      },
    );
  }
  return {
    material_processing_set: [
      {
        id: 'nmdc:poolp-11-rvr00001',
        type: 'nmdc:Pooling',
        name: 'Pooling of Columbia River rhizosphere samples 3 and 4',
        has_input: RIVER_POOLED,
        has_output: ['nmdc:procsm-11-rvrpool1'],
      },
      {
        id: 'nmdc:extrp-11-rvr00001',
        type: 'nmdc:Extraction',
        name: 'DNA extraction of the pooled rhizosphere samples',
        has_input: ['nmdc:procsm-11-rvrpool1'],
        has_output: ['nmdc:procsm-11-rvrdna01'],
      },
    ],
    processed_sample_set: [
      {
        id: 'nmdc:procsm-11-rvrpool1',
        type: 'nmdc:ProcessedSample',
        name: 'Pooled rhizosphere samples 3 and 4',
      },
      { id: 'nmdc:procsm-11-rvrdna01', type: 'nmdc:ProcessedSample', name: 'DNA extract of the pool' },
    ],
    data_generation_set,
    workflow_execution_set,
    data_object_set,
  };
})();

/** Two records in each collection a search class reads that the generator leaves empty. */
export const OTHER_COLLECTIONS: Record<string, Doc[]> = {
  calibration_set: [
    { id: 'nmdc:calib-13-hyss1d03', type: 'nmdc:CalibrationInformation', name: 'GC-MS FAMEs calibration' },
    { id: 'nmdc:calib-13-zzk0fz12', type: 'nmdc:CalibrationInformation', name: 'GC-MS alkanes calibration' },
  ],
  collecting_biosamples_from_site_set: [
    { id: 'nmdc:clsite-13-0a1b2c3d', type: 'nmdc:CollectingBiosamplesFromSite', name: 'Core collection A' },
    { id: 'nmdc:clsite-13-0a1b2c3e', type: 'nmdc:CollectingBiosamplesFromSite', name: 'Core collection B' },
  ],
  configuration_set: [
    { id: 'nmdc:mscon-13-qkqvxy44', type: 'nmdc:MassSpectrometryConfiguration', name: 'FT-ICR MS positive' },
    { id: 'nmdc:chrcon-13-9a7p2n77', type: 'nmdc:ChromatographyConfiguration', name: 'C18 gradient 60 min' },
  ],
  manifest_set: [
    { id: 'nmdc:manif-13-7dbwjd44', type: 'nmdc:Manifest', name: 'Lipidomics run manifest' },
    { id: 'nmdc:manif-13-8qwmcm43', type: 'nmdc:Manifest', name: 'Metaproteomics run manifest' },
  ],
  material_processing_set: [
    { id: 'nmdc:extrp-13-4h2t7g41', type: 'nmdc:Extraction', name: 'DNA extraction of core 3' },
    { id: 'nmdc:subspr-13-1x8bqb65', type: 'nmdc:SubSamplingProcess', name: 'Subsampling of core 3' },
  ],
  processed_sample_set: [
    { id: 'nmdc:procsm-13-1nd0se58', type: 'nmdc:ProcessedSample', name: 'DNA extract of core 3' },
    { id: 'nmdc:procsm-13-2vx9c420', type: 'nmdc:ProcessedSample', name: 'Subsample of core 3' },
  ],
  storage_process_set: [
    { id: 'nmdc:storpr-13-5bjx1s86', type: 'nmdc:StorageProcess', name: 'Freezer storage of core 3' },
    { id: 'nmdc:storpr-13-7pmx2c41', type: 'nmdc:StorageProcess', name: 'Cold room storage of core 4' },
  ],
};

/** Everything above, for `startCompatServer`. */
export const CLIENT_RECORDS: Record<string, Doc[]> = (() => {
  const out: Record<string, Doc[]> = {};
  const add = (records: Record<string, Doc[]>) => {
    for (const [collection, docs] of Object.entries(records)) (out[collection] ??= []).push(...docs);
  };
  add({
    study_set: STUDIES,
    biosample_set: BIOSAMPLES,
    instrument_set: INSTRUMENTS,
    data_object_set: DATA_OBJECTS,
    workflow_execution_set: WORKFLOW_EXECUTIONS,
  });
  add(OTHER_COLLECTIONS);
  add(RIVER_LINEAGE);
  return out;
})();

/**
 * `functional_annotation_agg` members as the schema defines them (FunctionalAnnotationAggMember):
 * `was_generated_by`, `gene_function_id`, `count`, `type`, and no `id`. Twelve for KEGG K01426 (more
 * than two pages of 5), three for COG0001, two for PF00001, and one more KEGG term.
 */
export const FUNCTIONAL_ANNOTATION_AGG: Array<Record<string, unknown>> = [
  ...Array.from({ length: 12 }, (_, i) => ['KEGG.ORTHOLOGY:K01426', `nmdc:wfmgan-11-k${pad(i, 7)}.1`, 3 + i]),
  ...Array.from({ length: 3 }, (_, i) => ['COG:COG0001', `nmdc:wfmgan-11-c${pad(i, 7)}.1`, 40 + i]),
  ...Array.from({ length: 2 }, (_, i) => ['PFAM:PF00001', `nmdc:wfmgan-11-p${pad(i, 7)}.1`, 7 + i]),
  ['KEGG.ORTHOLOGY:K00001', 'nmdc:wfmgan-11-k0000000.1', 9],
].map(([gene_function_id, was_generated_by, count]) => ({
  was_generated_by,
  gene_function_id,
  count,
  type: 'nmdc:FunctionalAnnotationAggMember',
}));
