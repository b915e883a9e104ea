/**
 * Records the NMDC example notebooks (`microbiomedata/nmdc_notebooks`) need on the service before
 * their calls mean anything: the ids they use literally (`nmdc:sty-11-34xj1150`,
 * `nmdc:bsm-13-bgefg837`, `nmdc:manif-11-7796sg87`, ...), the values their filters look for
 * (studies named "National Ecological Observatory Network ...", data objects of type "Direct
 * Infusion FT-ICR MS Analysis Results", Colorado biosamples with a soil horizon, ...), the fields
 * they read afterwards, and the provenance chains they walk (biosample -> material processing ->
 * data generation -> data object -> workflow execution -> data object). Enough records of each kind
 * that the notebooks' page loops turn more than once, and near misses that their filters must not
 * match.
 */
import type { Doc } from '../../../src/store/port.ts';

const pad = (n: number, width = 4): string => String(n).padStart(width, '0');

const term = (id: string, name: string) => ({
  has_raw_value: `${name} [${id}]`,
  term: { id, name, type: 'nmdc:OntologyClass' },
  type: 'nmdc:ControlledIdentifiedTermValue',
});
const quantity = (value: number, unit: string) => ({
  has_raw_value: `${value} ${unit}`,
  has_numeric_value: value,
  has_unit: unit,
  type: 'nmdc:QuantityValue',
});
const text = (value: string) => ({ has_raw_value: value, type: 'nmdc:TextValue' });
const latLon = (latitude: number, longitude: number) => ({
  has_raw_value: `${latitude} ${longitude}`,
  latitude,
  longitude,
  type: 'nmdc:GeolocationValue',
});
const md5 = (seed: string): string => {
  let h = 0x811c9dc5;
  let out = '';
  for (let round = 0; round < 4; round++) {
    for (const ch of `${seed}#${round}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    out += h.toString(16).padStart(8, '0');
  }
  return out;
};
const dataObject = (id: string, dataObjectType: string, fields: Record<string, unknown> = {}): Doc => {
  const name = `${id.replace(':', '_')}_${dataObjectType.replace(/\W+/g, '_')}`;
  return {
    id,
    type: 'nmdc:DataObject',
    name,
    description: `${dataObjectType} for ${id}`,
    data_object_type: dataObjectType,
    data_category: 'processed_data',
    file_size_bytes: 10_000 + (parseInt(md5(id).slice(0, 6), 16) % 1_000_000),
    md5_checksum: md5(id),
    url: `https://data.microbiomedata.org/data/${id}/${name}`,
    ...fields,
  };
};

// ---------------------------------------------------------------------------------------------
// Studies: the compact text searches of the NEON and Bio-Scales notebooks, and the studies the
// other notebooks' biosamples belong to.

export const NEON_SOIL_STUDY = 'nmdc:sty-11-34xj1150';
export const NEON_BENTHIC_STUDY = 'nmdc:sty-11-hht5sb92';
export const NEON_SURFACE_WATER_STUDY = 'nmdc:sty-11-pzmd0x14';
export const BIOSCALES_STUDY = 'nmdc:sty-11-r2h77870';
export const SPRUCE_STUDY = 'nmdc:sty-11-33fbta56';
export const COLUMBIA_RIVER_STUDY = 'nmdc:sty-11-aygzgv51';
export const HARVARD_FOREST_STUDY = 'nmdc:sty-11-8ws97026';
export const SOILS_1000_STUDY = 'nmdc:sty-11-28tm5d36';
export const NIWOT_RIDGE_STUDY = 'nmdc:sty-11-nwtr0001';

const study = (id: string, name: string, title: string): Doc => ({
  id,
  type: 'nmdc:Study',
  name,
  title,
  description: `${title}.`,
  study_category: 'research_study',
  ecosystem: 'Environmental',
  ecosystem_category: 'Terrestrial',
});

export const studies: Doc[] = [
  study(
    NEON_SOIL_STUDY,
    'National Ecological Observatory Network: soil metagenomes (DP1.10107.001)',
    'National Ecological Observatory Network soil microbe community metagenome sequences',
  ),
  study(
    NEON_BENTHIC_STUDY,
    'National Ecological Observatory Network: benthic metagenomes (DP1.20279.001)',
    'National Ecological Observatory Network benthic microbe community metagenome sequences',
  ),
  study(
    NEON_SURFACE_WATER_STUDY,
    'National Ecological Observatory Network: surface water metagenomes (DP1.20281.001)',
    'National Ecological Observatory Network surface water microbe community metagenome sequences',
  ),
  // The phrase in the title only, or only part of it in the name: not a name search hit.
  study(
    'nmdc:sty-11-neon0001',
    'Soil microbes across Ecological Observatory Network sites',
    'Comparing National Ecological Observatory Network soils with agricultural soils',
  ),
  study(
    BIOSCALES_STUDY,
    'Bio-Scales',
    'Bio-Scales: Defining plant gene function and its connection to ecosystem nitrogen and carbon cycling',
  ),
  // "Bio-Scales" in the name only, and a title without the hyphen: not a title search hit.
  study('nmdc:sty-11-bscl0001', 'Bio-Scales pilot', 'Poplar rhizosphere pilot sampling'),
  study('nmdc:sty-11-bscl0002', 'Poplar follow-up', 'BioScales follow-up of Populus trichocarpa genotypes'),
  study(
    SPRUCE_STUDY,
    'SPRUCE',
    'Spruce and Peatland Responses Under Changing Environments (SPRUCE) peat metaproteomes',
  ),
  study(
    COLUMBIA_RIVER_STUDY,
    'Columbia River sediment',
    'Multi-omics of Columbia River hyporheic zone sediments',
  ),
  study(
    HARVARD_FOREST_STUDY,
    'Harvard Forest',
    'Harvard Forest soil warming metagenomes and metatranscriptomes',
  ),
  study(SOILS_1000_STUDY, '1000 Soils', 'Molecular Observation Network (MONet) 1000 Soils Research Campaign'),
  study(NIWOT_RIDGE_STUDY, 'Niwot Ridge', 'Soil horizons of Colorado alpine and subalpine sites'),
];

// ---------------------------------------------------------------------------------------------
// NEON soil biosamples (NEON_soil_metadata/R/neon_r.ipynb): more than one page of 2000, with the
// fields the notebook reads after the loop.

export const NEON_SOIL_BIOSAMPLE_COUNT = 2030;

const neonSoilBiosample = (n: number, associated = [NEON_SOIL_STUDY]): Doc => ({
  id: `nmdc:bsm-11-neon${pad(n)}`,
  type: 'nmdc:Biosample',
  name: `BART_${pad(n % 70, 3)}-${n % 2 ? 'M' : 'O'}-20160726-COMP`,
  associated_studies: associated,
  collection_date: { has_raw_value: `2016-07-${pad(1 + (n % 28), 2)}T14:30Z`, type: 'nmdc:TimestampValue' },
  soil_horizon: n % 2 ? 'M horizon' : 'O horizon',
  water_content: [`${(0.2 + (n % 60) / 100).toFixed(3)} g of water/g of dry soil`],
  ph: 3.5 + (n % 40) / 10,
  elev: 230 + (n % 300),
  geo_loc_name: text('USA: New Hampshire, Bartlett Experimental Forest'),
  lat_lon: latLon(44.06 + (n % 10) / 1000, -71.29 - (n % 7) / 1000),
  env_broad_scale: term('ENVO:01000250', 'temperate broadleaf forest biome'),
  env_local_scale: term('ENVO:01000861', 'area of deciduous forest'),
  env_medium: term('ENVO:00001998', 'soil'),
});

export const neonSoilBiosamples: Doc[] = Array.from({ length: NEON_SOIL_BIOSAMPLE_COUNT }, (_, n) =>
  // One sample shared with the benthic study, listed second.
  n === 17 ? neonSoilBiosample(n, [NEON_BENTHIC_STUDY, NEON_SOIL_STUDY]) : neonSoilBiosample(n),
);
export const neonOtherBiosamples: Doc[] = Array.from({ length: 5 }, (_, n) => {
  const { soil_horizon: _horizon, ...benthic } = neonSoilBiosample(9000 + n, [NEON_BENTHIC_STUDY]);
  return { ...benthic, name: `BART.AOS.benthic.${n}` } as Doc;
});

// ---------------------------------------------------------------------------------------------
// Bio-Scales biosamples (bioscales_biogeochemical_metadata/R/bioscales_r.ipynb).

export const bioscalesBiosamples: Doc[] = Array.from({ length: 14 }, (_, n) => ({
  id: n === 0 ? 'nmdc:bsm-11-08mamh62' : `nmdc:bsm-11-bscl${pad(n)}`,
  type: 'nmdc:Biosample',
  name: `Bio-Scales poplar rhizosphere ${n}`,
  associated_studies: [BIOSCALES_STUDY],
  ecosystem_subtype: n % 2 ? 'Rhizosphere' : 'Bulk soil',
  habitat: n % 3 ? 'Populus trichocarpa rhizosphere' : 'Populus deltoides rhizosphere',
  ph: 5.5 + n / 10,
  calcium: quantity(900 + n * 11, 'mg/kg'),
  magnesium: quantity(120 + n * 3, 'mg/kg'),
  potassium: quantity(80 + n * 2, 'mg/kg'),
  manganese: quantity(14 + n / 2, 'mg/kg'),
  zinc: quantity(1.5 + n / 10, 'mg/kg'),
  nitrate_nitrogen: quantity(3 + n / 4, 'mg/kg'),
  nitrite_nitrogen: quantity(0.1 + n / 100, 'mg/kg'),
  ammonium_nitrogen: quantity(2 + n / 5, 'mg/kg'),
  tot_nitro: quantity(0.12 + n / 100, 'percent'),
  geo_loc_name: text('USA: Tennessee, Oak Ridge'),
}));

// ---------------------------------------------------------------------------------------------
// NOM_visualizations/R/nom_r.ipynb: FT-ICR MS analysis results -> NOM analyses -> raw data ->
// mass spectrometry data generations -> processed samples -> biosamples. Every third data
// generation reads a biosample directly, every third a processed sample extracted from one, and
// every third a processed sample subsampled from an extract, so the source walk takes two rounds.

export const NOM_RESULT_COUNT = 210;
const NOM_BIOSAMPLE_COUNT = 70;
export const NOM_RESULT_TYPE = 'Direct Infusion FT-ICR MS Analysis Results';
export const NOM_RAW_TYPE = 'Direct Infusion FT ICR-MS Raw Data';
export const NOM_PARAMETER_FILE = 'nmdc:dobj-11-bmeg5b74';

const NAMED = <T>(named: T[], n: number, generated: (n: number) => T): T => named[n] ?? generated(n);
const asIds = (value: unknown): string[] => (Array.isArray(value) ? (value as string[]) : []);
const nomBiosampleId = (b: number) =>
  NAMED(
    ['nmdc:bsm-11-12esnc57', 'nmdc:bsm-11-4gh52t60', 'nmdc:bsm-11-5w421v18'],
    b,
    (i) => `nmdc:bsm-11-nomb${pad(i)}`,
  );
const nomResultId = (k: number) =>
  NAMED(
    ['nmdc:dobj-11-003x7710', 'nmdc:dobj-11-00dewm52', 'nmdc:dobj-11-00wm3313'],
    k,
    (i) => `nmdc:dobj-11-nomres${pad(i)}`,
  );
const nomRawId = (k: number) =>
  NAMED(
    ['nmdc:dobj-11-2ysghy98', 'nmdc:dobj-11-3hfzr472', 'nmdc:dobj-11-2mk4qf09'],
    k,
    (i) => `nmdc:dobj-11-nomraw${pad(i)}`,
  );
export const nomAnalysisId = (k: number) =>
  NAMED(['nmdc:wfnom-11-dv3wck24.1'], k, (i) => `nmdc:wfnom-11-nom${pad(i)}.1`);
const nomGenerationId = (k: number) => `nmdc:dgms-11-nom${pad(k)}`;
/** The processed sample a data generation reads (none for every third). */
const nomProcessedId = (k: number) =>
  NAMED(
    [undefined, 'nmdc:procsm-11-ckacrz04', 'nmdc:procsm-11-vkg85558', undefined, 'nmdc:procsm-11-4h2s2t66'],
    k,
    (i) => (i % 3 === 0 ? undefined : `nmdc:procsm-11-nomp${pad(i)}`),
  );
/** The source biosample of data generation k. */
export const nomSourceBiosample = (k: number) => nomBiosampleId(k % NOM_BIOSAMPLE_COUNT);

export const nomBiosamples: Doc[] = Array.from({ length: NOM_BIOSAMPLE_COUNT }, (_, b) => ({
  id: nomBiosampleId(b),
  type: 'nmdc:Biosample',
  name: `MONet core ${b} ${b % 2 ? 'top' : 'bottom'}`,
  associated_studies: [SOILS_1000_STUDY],
  env_broad_scale: term('ENVO:00000446', 'terrestrial biome'),
  env_local_scale: term(b % 2 ? 'ENVO:00002261' : 'ENVO:00002042', b % 2 ? 'forest soil' : 'surface water'),
  env_medium: term(b % 3 ? 'ENVO:00002007' : 'ENVO:01000017', b % 3 ? 'sediment' : 'sand'),
  geo_loc_name: text('USA: Washington, Richland'),
  depth: quantity(0.1 * (b % 5), 'm'),
}));

const nomRecords = (() => {
  const data_object_set: Doc[] = [
    dataObject(NOM_PARAMETER_FILE, 'Analysis Tool Parameter File', {
      data_category: 'workflow_parameter_data',
    }),
  ];
  const workflow_execution_set: Doc[] = [];
  const data_generation_set: Doc[] = [];
  const material_processing_set: Doc[] = [];
  for (let k = 0; k < NOM_RESULT_COUNT; k++) {
    data_object_set.push(
      dataObject(nomResultId(k), NOM_RESULT_TYPE, { was_generated_by: nomAnalysisId(k) }),
      dataObject(nomRawId(k), NOM_RAW_TYPE, {
        was_generated_by: nomGenerationId(k),
        data_category: 'instrument_data',
      }),
    );
    workflow_execution_set.push({
      id: nomAnalysisId(k),
      type: 'nmdc:NomAnalysis',
      name: `NOM analysis of ${nomRawId(k)}`,
      version: 'v1.0.0',
      was_informed_by: [nomGenerationId(k)],
      has_input: [nomRawId(k), NOM_PARAMETER_FILE],
      has_output: [nomResultId(k)],
      started_at_time: '2024-03-01T10:00:00Z',
      ended_at_time: '2024-03-01T11:00:00Z',
    });
    const processed = nomProcessedId(k);
    data_generation_set.push({
      id: nomGenerationId(k),
      type: 'nmdc:MassSpectrometry',
      name: `FT-ICR MS run ${k}`,
      analyte_category: 'nom',
      associated_studies: [SOILS_1000_STUDY],
      has_input: [processed ?? nomSourceBiosample(k)],
      has_output: [nomRawId(k)],
    });
    if (processed && k % 3 === 1) {
      material_processing_set.push({
        id: `nmdc:extrp-11-nom${pad(k)}`,
        type: 'nmdc:Extraction',
        name: `Water extraction ${k}`,
        has_input: [nomSourceBiosample(k)],
        has_output: [processed],
      });
    } else if (processed) {
      const extract = `nmdc:procsm-11-nomx${pad(k)}`;
      material_processing_set.push(
        {
          id: `nmdc:extrp-11-nom${pad(k)}`,
          type: 'nmdc:Extraction',
          name: `Water extraction ${k}`,
          has_input: [nomSourceBiosample(k)],
          has_output: [extract],
        },
        {
          id: `nmdc:subspr-11-nom${pad(k)}`,
          type: 'nmdc:SubSamplingProcess',
          name: `Subsampling of extract ${k}`,
          has_input: [extract],
          has_output: [processed],
        },
      );
    }
  }
  // Near misses of the case-sensitive regex, and a longer type that contains the phrase.
  data_object_set.push(
    dataObject('nmdc:dobj-11-nomcase1', NOM_RESULT_TYPE.toLowerCase()),
    dataObject('nmdc:dobj-11-nomcase2', 'Direct Infusion FT-ICR MS Analysis'),
    dataObject('nmdc:dobj-11-nomlong1', `${NOM_RESULT_TYPE} (legacy)`),
  );
  return { data_object_set, workflow_execution_set, data_generation_set, material_processing_set };
})();

// ---------------------------------------------------------------------------------------------
// NOM_visualizations/python/nmdc_api.py: the older type name its notebook searched for.

export const FTICR_TYPE = 'FT ICR-MS Analysis Results';
export const fticrDataObjects: Doc[] = [
  ...Array.from({ length: 130 }, (_, n) => dataObject(`nmdc:dobj-11-ftic${pad(n)}`, FTICR_TYPE)),
  dataObject('nmdc:dobj-11-fticcase', FTICR_TYPE.toUpperCase()),
];

// ---------------------------------------------------------------------------------------------
// taxonomic_dist_by_soil_layer/R/taxonomic_r.ipynb: Colorado biosamples with a soil horizon ->
// pooling / extraction -> library preparation -> data generations -> workflow executions ->
// Scaffold Lineage data objects.

export const COLORADO_HORIZON_COUNT = 230;
const coloradoBiosampleId = (n: number) =>
  NAMED(
    ['nmdc:bsm-11-00m15h97', 'nmdc:bsm-11-06ta8e31', 'nmdc:bsm-11-06tgpb52'],
    n,
    (i) => `nmdc:bsm-11-taxb${pad(i)}`,
  );

export const coloradoBiosamples: Doc[] = Array.from({ length: COLORADO_HORIZON_COUNT }, (_, n) => ({
  id: coloradoBiosampleId(n),
  type: 'nmdc:Biosample',
  name: `NIWO_${pad(n, 3)}-${n % 2 ? 'M' : 'O'}`,
  associated_studies: [NIWOT_RIDGE_STUDY],
  soil_horizon: n % 2 ? 'M horizon' : 'O horizon',
  geo_loc_name: text(
    n % 4 ? 'USA: Colorado, Niwot Ridge' : 'USA: Colorado, Central Plains Experimental Range',
  ),
  depth: quantity(0.05 * (n % 6), 'm'),
  env_medium: term('ENVO:00001998', 'soil'),
}));
/** Colorado without a horizon, a horizon elsewhere, and the state in capitals: no match. */
export const coloradoNearMisses: Doc[] = [
  ...[0, 1, 2].map((n) => ({
    id: `nmdc:bsm-11-taxn${pad(n)}`,
    type: 'nmdc:Biosample',
    name: `Colorado surface water ${n}`,
    associated_studies: [NIWOT_RIDGE_STUDY],
    geo_loc_name: text('USA: Colorado, Boulder Creek'),
  })),
  ...[3, 4, 5].map((n) => ({
    id: `nmdc:bsm-11-taxn${pad(n)}`,
    type: 'nmdc:Biosample',
    name: `Utah soil ${n}`,
    associated_studies: [NIWOT_RIDGE_STUDY],
    soil_horizon: 'O horizon',
    geo_loc_name: text('USA: Utah, Moab'),
  })),
  ...[6, 7].map((n) => ({
    id: `nmdc:bsm-11-taxn${pad(n)}`,
    type: 'nmdc:Biosample',
    name: `Upper-case state ${n}`,
    associated_studies: [NIWOT_RIDGE_STUDY],
    soil_horizon: 'M horizon',
    geo_loc_name: text('USA: COLORADO, Fort Collins'),
  })),
];

export const POOLED_SAMPLE = 'nmdc:procsm-11-ytthx235';
export const EXTRACTED_SAMPLE = 'nmdc:procsm-11-cd8pg312';
export const LIBRARY_SAMPLE = 'nmdc:procsm-11-jrykhg31';
export const TAXONOMIC_GENERATIONS = ['nmdc:omprc-11-63ajbd04', 'nmdc:dgns-11-ekte1238'];

const taxonomicRecords = (() => {
  const material_processing_set: Doc[] = [];
  // The first 60 biosamples are pooled in threes, each pool starting a chain.
  for (let p = 0; p < 20; p++) {
    const pooled = p === 0 ? POOLED_SAMPLE : `nmdc:procsm-11-taxp${pad(p)}`;
    const extracted = p === 0 ? EXTRACTED_SAMPLE : `nmdc:procsm-11-taxe${pad(p)}`;
    const library = p === 0 ? LIBRARY_SAMPLE : `nmdc:procsm-11-taxl${pad(p)}`;
    material_processing_set.push(
      {
        id: `nmdc:poolp-11-tax${pad(p)}`,
        type: 'nmdc:Pooling',
        name: `Pooling of NIWO cores ${3 * p}-${3 * p + 2}`,
        has_input: [0, 1, 2].map((i) => coloradoBiosampleId(3 * p + i)),
        has_output: [pooled],
      },
      {
        id: `nmdc:extrp-11-taxp${pad(p)}`,
        type: 'nmdc:Extraction',
        name: `DNA extraction of pool ${p}`,
        has_input: [pooled],
        has_output: [extracted],
      },
      {
        id: `nmdc:libprp-11-tax${pad(p)}`,
        type: 'nmdc:LibraryPreparation',
        name: `Library preparation of pool ${p}`,
        has_input: [extracted],
        has_output: [library],
      },
    );
  }
  // Every biosample also has an extraction of its own (more matches than ids per chunk).
  for (let n = 0; n < COLORADO_HORIZON_COUNT; n++) {
    material_processing_set.push({
      id: `nmdc:extrp-11-taxb${pad(n)}`,
      type: 'nmdc:Extraction',
      name: `Metabolite extraction of NIWO core ${n}`,
      has_input: [coloradoBiosampleId(n)],
      has_output: [`nmdc:procsm-11-taxm${pad(n)}`],
    });
  }
  // Processes that produce, not consume, the chain's samples: no has_input match.
  material_processing_set.push({
    id: 'nmdc:extrp-11-taxdecoy',
    type: 'nmdc:Extraction',
    name: 'Re-extraction producing the pooled sample',
    has_input: ['nmdc:procsm-11-taxother'],
    has_output: [POOLED_SAMPLE, EXTRACTED_SAMPLE],
  });

  const data_generation_set: Doc[] = TAXONOMIC_GENERATIONS.map((id, i) => ({
    id,
    type: 'nmdc:NucleotideSequencing',
    name: `Metagenome sequencing ${i} of pool 0`,
    analyte_category: 'metagenome',
    associated_studies: [NIWOT_RIDGE_STUDY],
    has_input: [LIBRARY_SAMPLE],
    has_output: [`nmdc:dobj-11-taxraw${i}`],
  }));
  data_generation_set.push({
    id: 'nmdc:dgns-11-taxother',
    type: 'nmdc:NucleotideSequencing',
    name: 'Metagenome sequencing of pool 1',
    analyte_category: 'metagenome',
    has_input: ['nmdc:procsm-11-taxl0001'],
    has_output: ['nmdc:dobj-11-taxraw9'],
  });

  // Every workflow of both data generations, several versions each: more than a page of 20.
  const workflows: Array<[typecode: string, type: string, versions: number]> = [
    ['wfrqc', 'nmdc:ReadQcAnalysis', 2],
    ['wfmgas', 'nmdc:MetagenomeAssembly', 2],
    ['wfmgan', 'nmdc:MetagenomeAnnotation', 3],
    ['wfmag', 'nmdc:MagsAnalysis', 2],
    ['wfrbt', 'nmdc:ReadBasedTaxonomyAnalysis', 2],
  ];
  const scaffoldLineages = ['nmdc:dobj-11-f0shbt75', 'nmdc:dobj-11-jg6awk48', 'nmdc:dobj-11-jp45gr33'];
  const workflow_execution_set: Doc[] = [];
  const data_object_set: Doc[] = [];
  let lineage = 0;
  for (const [g, generation] of [...TAXONOMIC_GENERATIONS, 'nmdc:dgns-11-taxother'].entries()) {
    for (const [typecode, type, versions] of workflows) {
      for (let v = 1; v <= versions; v++) {
        const id = `nmdc:${typecode}-11-tax0000${g}.${v}`;
        const outputs = [`nmdc:dobj-11-t${g}${typecode}${v}a`];
        data_object_set.push(dataObject(outputs[0]!, `${type.slice(5)} output`, { was_generated_by: id }));
        if (type === 'nmdc:MetagenomeAnnotation') {
          const scaffold = scaffoldLineages[lineage++] ?? `nmdc:dobj-11-tsl${g}${v}`;
          outputs.unshift(scaffold);
          data_object_set.push(dataObject(scaffold, 'Scaffold Lineage tsv', { was_generated_by: id }));
        }
        workflow_execution_set.push({
          id,
          type,
          name: `${type.slice(5)} v${v} for ${generation}`,
          version: `v1.${v}.0`,
          was_informed_by: [generation],
          has_input: [`nmdc:dobj-11-taxraw${g}`],
          has_output: outputs,
          started_at_time: '2023-05-01T08:00:00Z',
          ended_at_time: '2023-05-01T12:00:00Z',
        });
      }
    }
  }
  // The samples the processes pass along and the raw reads of each run, so the chains can be
  // walked from biosample to file (linked instances stop at ids that are not records).
  const processed_sample_set: Doc[] = [
    ...material_processing_set.flatMap((p) => [...asIds(p.has_input), ...asIds(p.has_output)]),
  ]
    .filter((id, i, all) => id.startsWith('nmdc:procsm-') && all.indexOf(id) === i)
    .map((id) => ({ id, type: 'nmdc:ProcessedSample', name: `Processed sample ${id.slice(15)}` }));
  for (const generation of data_generation_set) {
    for (const raw of asIds(generation.has_output)) {
      data_object_set.push(
        dataObject(raw, 'Metagenome Raw Reads', {
          was_generated_by: generation.id,
          data_category: 'instrument_data',
        }),
      );
    }
  }
  return {
    material_processing_set,
    processed_sample_set,
    data_generation_set,
    workflow_execution_set,
    data_object_set,
  };
})();

// ---------------------------------------------------------------------------------------------
// omics_types_integration and proteomic_aggregation (R): Columbia River biosamples, the
// workflows behind their annotation, metabolomics and metaproteomics results, and a manifest.

export const MANIFEST_ID = 'nmdc:manif-11-7796sg87';
export const columbiaBiosampleIds = [
  'nmdc:bsm-13-0jw5n594',
  'nmdc:bsm-13-13145k83',
  'nmdc:bsm-13-1p0tct86',
  'nmdc:bsm-13-2qfz8m17',
  'nmdc:bsm-13-5kxnhb42',
  'nmdc:bsm-13-8ww0pm31',
];
export const columbiaBiosamples: Doc[] = columbiaBiosampleIds.map((id, n) => ({
  id,
  type: 'nmdc:Biosample',
  name: `Columbia River sediment ${n}`,
  samp_name: `CR_${n % 2 ? 'upstream' : 'downstream'}_${n}`,
  description: `Hyporheic zone sediment core ${n}`,
  associated_studies: [COLUMBIA_RIVER_STUDY],
  depth: {
    has_raw_value: ['0 - 0.1 m', '0.1 - 0.2 m', '0.2 - 0.3 m'][n % 3],
    has_numeric_value: [0, 0.1, 0.2][n % 3],
    has_unit: 'm',
    type: 'nmdc:QuantityValue',
  },
  lat_lon: n % 2 ? latLon(46.373, -119.275) : latLon(46.372, -119.272),
  geo_loc_name: text('USA: Washington, Columbia River'),
  env_medium: term('ENVO:00002007', 'sediment'),
}));

export const INTEGRATION_OUTPUTS = [
  'nmdc:dobj-11-wr2qfy21',
  'nmdc:dobj-11-3a4xgj72',
  'nmdc:dobj-11-yzphz319',
];
export const PROTEOMIC_OUTPUTS = ['nmdc:dobj-11-pxnhdj84', 'nmdc:dobj-11-7wk9es16', 'nmdc:dobj-11-ct23bs36'];

const omicsRecords = (() => {
  const data_object_set: Doc[] = [
    dataObject(INTEGRATION_OUTPUTS[0]!, 'Annotation Enzyme Commission', {
      was_generated_by: 'nmdc:wfmgan-11-crv00001.1',
    }),
    dataObject(INTEGRATION_OUTPUTS[1]!, 'Annotation KEGG Orthology', {
      was_generated_by: 'nmdc:wfmgan-11-crv00001.1',
    }),
    dataObject(INTEGRATION_OUTPUTS[2]!, 'GC-MS Metabolomics Results', {
      was_generated_by: 'nmdc:wfmb-11-crv00001.1',
    }),
    dataObject('nmdc:dobj-11-crvgff01', 'Functional Annotation GFF', {
      description: 'Functional Annotation for nmdc:wfmgan-11-crv00001.1',
      was_generated_by: 'nmdc:wfmgan-11-crv00001.1',
    }),
    dataObject('nmdc:dobj-11-crvraw01', 'Metaproteomics Raw Data', {
      data_category: 'instrument_data',
      in_manifest: [MANIFEST_ID],
      alternative_identifiers: ['emsl:output_1234567'],
    }),
    dataObject('nmdc:dobj-11-crvraw02', 'Metaproteomics Raw Data', {
      data_category: 'instrument_data',
      in_manifest: [MANIFEST_ID],
    }),
  ];
  const workflow_execution_set: Doc[] = [
    {
      id: 'nmdc:wfmgan-11-crv00001.1',
      type: 'nmdc:MetagenomeAnnotation',
      name: 'Annotation of Columbia River metagenome',
      version: 'v1.1.0',
      was_informed_by: ['nmdc:dgns-11-crv00001'],
      has_input: ['nmdc:dobj-11-crvasm01'],
      has_output: [INTEGRATION_OUTPUTS[0], INTEGRATION_OUTPUTS[1], 'nmdc:dobj-11-crvgff01'],
    },
    {
      id: 'nmdc:wfmb-11-crv00001.1',
      type: 'nmdc:MetabolomicsAnalysis',
      name: 'GC-MS metabolomics of Columbia River sediment',
      version: 'v3.0.0',
      was_informed_by: ['nmdc:dgms-11-crv00001'],
      has_input: ['nmdc:dobj-11-crvgcms'],
      has_output: [INTEGRATION_OUTPUTS[2]],
    },
  ];
  // Two metaproteomics runs, each analysed twice (v1.2.0 superseded by v1.2.1).
  for (const [r, raw] of ['nmdc:dobj-11-crvraw01', 'nmdc:dobj-11-crvraw02'].entries()) {
    for (const [v, version] of ['v1.2.0', 'v1.2.1'].entries()) {
      const id = `nmdc:wfmp-11-${r === 0 ? 'x0zhd078' : 'fz8k5p27'}.${v + 1}`;
      const unfiltered = v === 1 ? (PROTEOMIC_OUTPUTS[r] ?? '') : `nmdc:dobj-11-crvunf${r}${v}`;
      const report = `nmdc:dobj-11-crvpr${r}${v}`;
      data_object_set.push(
        dataObject(unfiltered, 'Unfiltered Metaproteomics Results', { was_generated_by: id }),
        dataObject(report, 'Protein Report', { was_generated_by: id }),
      );
      workflow_execution_set.push({
        id,
        type: 'nmdc:MetaproteomicsAnalysis',
        name: `Metaproteomics analysis ${version} of ${raw}`,
        version,
        metaproteomics_analysis_category: 'matched_metagenome',
        was_informed_by: [`nmdc:dgms-11-crvmp0${r}`],
        has_input: [raw, 'nmdc:dobj-11-crvfaa01', 'nmdc:dobj-11-crvgff01'],
        has_output: [unfiltered, report],
        started_at_time: `2024-0${v + 1}-10T08:00:00Z`,
        ended_at_time: `2024-0${v + 1}-10T20:00:00Z`,
      });
    }
  }
  // The third processed result comes from a run analysed once.
  data_object_set.push(
    dataObject(PROTEOMIC_OUTPUTS[2]!, 'Unfiltered Metaproteomics Results', {
      was_generated_by: 'nmdc:wfmp-11-crv00003.1',
    }),
  );
  workflow_execution_set.push({
    id: 'nmdc:wfmp-11-crv00003.1',
    type: 'nmdc:MetaproteomicsAnalysis',
    name: 'Metaproteomics analysis v1.2.1 of nmdc:dobj-11-crvraw03',
    version: 'v1.2.1',
    metaproteomics_analysis_category: 'matched_metagenome',
    was_informed_by: ['nmdc:dgms-11-crvmp02'],
    has_input: ['nmdc:dobj-11-crvraw03', 'nmdc:dobj-11-crvfaa01', 'nmdc:dobj-11-crvgff01'],
    has_output: [PROTEOMIC_OUTPUTS[2]],
  });
  const manifest_set: Doc[] = [
    {
      id: MANIFEST_ID,
      type: 'nmdc:Manifest',
      name: 'Columbia River metaproteomics instrument run',
      description: 'Raw data files of one instrument run',
      manifest_category: 'instrument_run',
    },
    {
      id: 'nmdc:manif-11-other001',
      type: 'nmdc:Manifest',
      name: 'Another run',
      manifest_category: 'poolable_replicates',
    },
  ];
  return { data_object_set, workflow_execution_set, manifest_set };
})();

// ---------------------------------------------------------------------------------------------
// over_representation (R and Python), and the biosample utility_functions.R's
// get_biosample_record_by_id fetches for the metaG/metaT notebook.

export const SPRUCE_BIOSAMPLE = 'nmdc:bsm-13-bgefg837';
export const HARVARD_FOREST_BIOSAMPLE = 'nmdc:bsm-11-042nd237';

export const singleBiosamples: Doc[] = [
  {
    id: SPRUCE_BIOSAMPLE,
    type: 'nmdc:Biosample',
    name: 'SPRUCE peat plot 6, 10-20 cm',
    associated_studies: [SPRUCE_STUDY],
    depth: quantity(0.1, 'm'),
    geo_loc_name: text('USA: Minnesota, Marcell Experimental Forest'),
    lat_lon: latLon(47.5063, -93.4527),
    env_medium: term('ENVO:00005774', 'peat soil'),
    ecosystem_type: 'Peat',
  },
  {
    id: HARVARD_FOREST_BIOSAMPLE,
    type: 'nmdc:Biosample',
    name: 'Harvard Forest heated plot, organic horizon',
    associated_studies: [HARVARD_FOREST_STUDY],
    soil_horizon: 'O horizon',
    geo_loc_name: text('USA: Massachusetts, Petersham'),
    lat_lon: latLon(42.5378, -72.1715),
    collection_date: { has_raw_value: '2017-05-24', type: 'nmdc:TimestampValue' },
    env_broad_scale: term('ENVO:01000250', 'temperate broadleaf forest biome'),
    env_local_scale: term('ENVO:01000861', 'area of deciduous forest'),
    env_medium: term('ENVO:00001998', 'soil'),
    alternative_identifiers: ['gold:Gb0291735'],
  },
];

// ---------------------------------------------------------------------------------------------
// The provenance `/data_objects/study/{id}` walks for the notebooks that call it: from each study's
// biosamples through the data generations (directly or through a DNA extract) to the raw data,
// and through the workflow executions to their outputs.
// - Columbia River (integration and aggregation, R and Python): sediment 0 sequenced, assembled
//   and annotated (the annotation above), measured by GC-MS (the metabolomics above) and by two
//   metaproteomics runs (the analyses above); sediment 1 by a third run, analysed against sediment
//   0's annotation, so that run's results descend from both. The other sediments have no data.
// - Harvard Forest (metaG/metaT): one sample's metagenome and metatranscriptome, annotated, with
//   gene phylogeny and expression results whose urls name the workflow (`nmdc:wfmg...`,
//   `nmdc:wfmt...`), as the metaG/metaT notebook tells them apart by.
// - SPRUCE (over-representation): one sample's metagenome annotation (one amino acid FASTA, a
//   functional annotation GFF and another GFF) and a metaproteomics analysis against it, whose
//   protein report names the FASTA.

/** A data object a process produced, filed under the data generation and the workflow as the portal does. */
const produced = (
  id: string,
  dataObjectType: string,
  generation: string,
  producer: string,
  fields: Record<string, unknown> = {},
): Doc => {
  const file = dataObject(id, dataObjectType, { was_generated_by: producer, ...fields });
  const path = producer === generation ? generation : `${generation}/${producer}`;
  return { ...file, url: `https://data.microbiomedata.org/data/${path}/${file.name}` };
};

const dataGeneration = (
  id: string,
  analyteCategory: string,
  study: string,
  input: string,
  output: string,
): Doc => ({
  id,
  type: id.includes(':dgms-') ? 'nmdc:MassSpectrometry' : 'nmdc:NucleotideSequencing',
  name: `${analyteCategory} data generation from ${input}`,
  analyte_category: analyteCategory,
  associated_studies: [study],
  has_input: [input],
  has_output: [output],
});

const workflowExecution = (
  id: string,
  type: string,
  generation: string,
  inputs: string[],
  outputs: string[],
  fields: Record<string, unknown> = {},
): Doc => ({
  id,
  type,
  name: `${type.slice(5)} of ${generation}`,
  version: 'v1.0.0',
  was_informed_by: [generation],
  has_input: inputs,
  has_output: outputs,
  started_at_time: '2024-04-02T08:00:00Z',
  ended_at_time: '2024-04-02T14:00:00Z',
  ...fields,
});

/**
 * A sequencing run of `input` and its standard processing: read QC, assembly (into `contigs`, by
 * default an id of the run's own) and, when `annotation` gives its outputs (`[id,
 * data_object_type, fields]`), annotation of the assembly.
 */
function sequencingRun(
  tag: string,
  shoulder: '11' | '13',
  analyte: 'metagenome' | 'metatranscriptome',
  study: string,
  input: string,
  annotation: Array<[string, string, Record<string, unknown>?]>,
  contigs = `nmdc:dobj-${shoulder}-${tag}c`,
): Record<string, Doc[]> {
  const t = analyte === 'metagenome' ? 'mg' : 'mt';
  const generation = `nmdc:dgns-${shoulder}-${tag}`;
  const [readQc, assembly, annotating] = ['wfrqc', `wf${t}as`, `wf${t}an`].map(
    (code) => `nmdc:${code}-${shoulder}-${tag}.1`,
  ) as [string, string, string];
  const raw = `nmdc:dobj-${shoulder}-${tag}r`;
  const filtered = `nmdc:dobj-${shoulder}-${tag}f`;
  const rawType = analyte === 'metagenome' ? 'Metagenome Raw Reads' : 'Metatranscriptome Raw Reads';
  return {
    data_generation_set: [dataGeneration(generation, analyte, study, input, raw)],
    workflow_execution_set: [
      workflowExecution(readQc, 'nmdc:ReadQcAnalysis', generation, [raw], [filtered]),
      workflowExecution(
        assembly,
        analyte === 'metagenome' ? 'nmdc:MetagenomeAssembly' : 'nmdc:MetatranscriptomeAssembly',
        generation,
        [filtered],
        [contigs],
      ),
      ...(annotation.length > 0
        ? [
            workflowExecution(
              annotating,
              analyte === 'metagenome' ? 'nmdc:MetagenomeAnnotation' : 'nmdc:MetatranscriptomeAnnotation',
              generation,
              [contigs],
              annotation.map(([id]) => id),
            ),
          ]
        : []),
    ],
    data_object_set: [
      produced(raw, rawType, generation, generation, { data_category: 'instrument_data' }),
      produced(filtered, 'Filtered Sequencing Reads', generation, readQc),
      produced(contigs, 'Assembly Contigs', generation, assembly),
      ...annotation.map(([id, type, fields]) => produced(id, type, generation, annotating, fields)),
    ],
  };
}

export const COLUMBIA_FASTA = 'nmdc:dobj-11-crvfaa01';

const columbiaLineage: Record<string, Doc[]> = (() => {
  const [sediment0, sediment1] = columbiaBiosampleIds as [string, string];
  const extract = 'nmdc:procsm-11-crvdna01';
  // The metagenome's annotation is the one above (nmdc:wfmgan-11-crv00001.1, reading
  // nmdc:dobj-11-crvasm01); its amino acid FASTA is added here.
  const run = sequencingRun(
    'crv00001',
    '11',
    'metagenome',
    COLUMBIA_RIVER_STUDY,
    extract,
    [],
    'nmdc:dobj-11-crvasm01',
  );
  const generation = 'nmdc:dgns-11-crv00001';
  const massSpectrometry: Array<[string, string, string, string, string]> = [
    ['nmdc:dgms-11-crv00001', 'metabolome', sediment0, 'nmdc:dobj-11-crvgcms', 'GC-MS Raw Data'],
    ['nmdc:dgms-11-crvmp00', 'metaproteome', sediment0, 'nmdc:dobj-11-crvraw01', ''],
    ['nmdc:dgms-11-crvmp01', 'metaproteome', sediment0, 'nmdc:dobj-11-crvraw02', ''],
    ['nmdc:dgms-11-crvmp02', 'metaproteome', sediment1, 'nmdc:dobj-11-crvraw03', 'Metaproteomics Raw Data'],
  ];
  return {
    material_processing_set: [
      {
        id: 'nmdc:extrp-11-crv00001',
        type: 'nmdc:Extraction',
        name: 'DNA extraction of Columbia River sediment 0',
        has_input: [sediment0],
        has_output: [extract],
      },
    ],
    processed_sample_set: [
      { id: extract, type: 'nmdc:ProcessedSample', name: 'DNA extract of Columbia River sediment 0' },
    ],
    data_generation_set: [
      ...run.data_generation_set!,
      ...massSpectrometry.map(([id, analyte, input, output]) =>
        dataGeneration(id, analyte, COLUMBIA_RIVER_STUDY, input, output),
      ),
    ],
    workflow_execution_set: run.workflow_execution_set!,
    data_object_set: [
      ...run.data_object_set!,
      produced(COLUMBIA_FASTA, 'Annotation Amino Acid FASTA', generation, 'nmdc:wfmgan-11-crv00001.1'),
      // The raw data not already above (the first two metaproteomics files are).
      ...massSpectrometry
        .filter(([, , , , type]) => type !== '')
        .map(([id, , , output, type]) =>
          produced(output, type, id, id, { data_category: 'instrument_data' }),
        ),
    ],
  };
})();

const harvardForestLineage: Record<string, Doc[]> = (() => {
  const metagenome = sequencingRun(
    'hrv00001',
    '11',
    'metagenome',
    HARVARD_FOREST_STUDY,
    HARVARD_FOREST_BIOSAMPLE,
    [
      ['nmdc:dobj-11-hrv00001k', 'Annotation KEGG Orthology'],
      ['nmdc:dobj-11-hrv00001p', 'Gene Phylogeny tsv'],
      ['nmdc:dobj-11-hrv00001g', 'Functional Annotation GFF'],
    ],
  );
  const metatranscriptome = sequencingRun(
    'hrv00002',
    '11',
    'metatranscriptome',
    HARVARD_FOREST_STUDY,
    HARVARD_FOREST_BIOSAMPLE,
    [
      ['nmdc:dobj-11-hrv00002k', 'Annotation KEGG Orthology'],
      ['nmdc:dobj-11-hrv00002g', 'Functional Annotation GFF'],
    ],
  );
  const generation = 'nmdc:dgns-11-hrv00002';
  const expression = 'nmdc:wfmtex-11-hrv00002.1';
  return {
    data_generation_set: [...metagenome.data_generation_set!, ...metatranscriptome.data_generation_set!],
    workflow_execution_set: [
      ...metagenome.workflow_execution_set!,
      ...metatranscriptome.workflow_execution_set!,
      workflowExecution(
        expression,
        'nmdc:MetatranscriptomeExpressionAnalysis',
        generation,
        ['nmdc:dobj-11-hrv00002f', 'nmdc:dobj-11-hrv00002g'],
        ['nmdc:dobj-11-hrv00002x'],
      ),
    ],
    data_object_set: [
      ...metagenome.data_object_set!,
      ...metatranscriptome.data_object_set!,
      produced('nmdc:dobj-11-hrv00002x', 'Metatranscriptome Expression', generation, expression),
    ],
  };
})();

export const SPRUCE_FASTA = 'nmdc:dobj-13-spr00001a';
export const SPRUCE_FUNCTIONAL_GFF = 'nmdc:dobj-13-spr00001g';
export const SPRUCE_PROTEIN_REPORT = 'nmdc:dobj-13-spr00002p';

const spruceLineage: Record<string, Doc[]> = (() => {
  const annotation = 'nmdc:wfmgan-13-spr00001.1';
  const metagenome = sequencingRun('spr00001', '13', 'metagenome', SPRUCE_STUDY, SPRUCE_BIOSAMPLE, [
    [SPRUCE_FASTA, 'Annotation Amino Acid FASTA'],
    [
      SPRUCE_FUNCTIONAL_GFF,
      'Functional Annotation GFF',
      { description: `Functional Annotation for ${annotation}` },
    ],
    [
      'nmdc:dobj-13-spr00001t',
      'CRT Annotation GFF',
      { description: `CRISPR Repeat Annotation for ${annotation}` },
    ],
  ]);
  const generation = 'nmdc:dgms-13-spr00002';
  const raw = 'nmdc:dobj-13-spr00002r';
  const analysis = 'nmdc:wfmp-13-spr00002.1';
  const report = `nmdc_${SPRUCE_PROTEIN_REPORT.slice(5)}_nmdc_${SPRUCE_FASTA.slice(5)}_Protein_Report.tsv`;
  return {
    data_generation_set: [
      ...metagenome.data_generation_set!,
      dataGeneration(generation, 'metaproteome', SPRUCE_STUDY, SPRUCE_BIOSAMPLE, raw),
    ],
    workflow_execution_set: [
      ...metagenome.workflow_execution_set!,
      workflowExecution(
        analysis,
        'nmdc:MetaproteomicsAnalysis',
        generation,
        [raw, SPRUCE_FASTA, SPRUCE_FUNCTIONAL_GFF],
        [SPRUCE_PROTEIN_REPORT, 'nmdc:dobj-13-spr00002u'],
        { version: 'v1.2.1', metaproteomics_analysis_category: 'matched_metagenome' },
      ),
    ],
    data_object_set: [
      ...metagenome.data_object_set!,
      produced(raw, 'Metaproteomics Raw Data', generation, generation, { data_category: 'instrument_data' }),
      produced(SPRUCE_PROTEIN_REPORT, 'Protein Report', generation, analysis, { name: report }),
      produced('nmdc:dobj-13-spr00002u', 'Unfiltered Metaproteomics Results', generation, analysis),
    ],
  };
})();

/** Everything the notebooks' calls need, by collection. */
export function notebookRecords(): Record<string, Doc[]> {
  const out: Record<string, Doc[]> = {};
  const add = (records: Record<string, Doc[]>) => {
    for (const [collection, docs] of Object.entries(records)) (out[collection] ??= []).push(...docs);
  };
  add({ study_set: studies });
  add({
    biosample_set: [
      ...neonSoilBiosamples,
      ...neonOtherBiosamples,
      ...bioscalesBiosamples,
      ...nomBiosamples,
      ...coloradoBiosamples,
      ...coloradoNearMisses,
      ...columbiaBiosamples,
      ...singleBiosamples,
    ],
  });
  add(nomRecords);
  add({ data_object_set: fticrDataObjects });
  add(taxonomicRecords);
  add(omicsRecords);
  add(columbiaLineage);
  add(harvardForestLineage);
  add(spruceLineage);
  return out;
}

/** The source biosample of one of the NOM notebook's mass spectrometry data generations. */
export function nomSourceOfGeneration(generationId: string): string {
  const k = Number(/^nmdc:dgms-11-nom(\d+)$/.exec(generationId)?.[1]);
  if (!Number.isInteger(k)) throw new Error(`not a NOM data generation: ${generationId}`);
  return nomSourceBiosample(k);
}

/** The Columbia River data objects, in the order the integration notebook lists them. */
export const columbiaDataObjectIds = omicsRecords.data_object_set.map((d) => d.id);

/** Every Unfiltered Metaproteomics Results object of the study, the aggregation notebook's three first. */
export const proteomicResultIds = [
  ...PROTEOMIC_OUTPUTS,
  ...omicsRecords.data_object_set
    .filter(
      (d) => d.data_object_type === 'Unfiltered Metaproteomics Results' && !PROTEOMIC_OUTPUTS.includes(d.id),
    )
    .map((d) => d.id),
];
