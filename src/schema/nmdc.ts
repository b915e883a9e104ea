/**
 * Facts about the NMDC metadata schema the service needs at run time: its version, the
 * collections of the Database class, and the id typecodes of each class.
 */

/** Version of the NMDC schema the records follow (reported by `/nmdcschema/version` and `/version`). */
export const SCHEMA_VERSION = '11.23.0';

/** The collections of the schema's Database class, sorted. */
export const COLLECTION_NAMES = [
  'biosample_set',
  'calibration_set',
  'collecting_biosamples_from_site_set',
  'configuration_set',
  'data_generation_set',
  'data_object_set',
  'field_research_site_set',
  'functional_annotation_agg',
  'functional_annotation_set',
  'genome_feature_set',
  'instrument_set',
  'manifest_set',
  'material_processing_set',
  'organism_sample_set',
  'organism_set',
  'processed_sample_set',
  'storage_process_set',
  'study_set',
  'workflow_execution_set',
] as const;

export type CollectionName = (typeof COLLECTION_NAMES)[number];

/** The `@type` a Database payload may carry beside its collections (not a collection itself). */
export function isDatabaseType(value: unknown): boolean {
  return value === 'Database' || value === 'nmdc:Database';
}

export function isCollectionName(name: string): name is CollectionName {
  return (COLLECTION_NAMES as readonly string[]).includes(name);
}

/**
 * Collections whose classes have no `id` slot (functional annotations and genome features): their
 * records carry no identifier.
 */
export const UNIDENTIFIED_COLLECTIONS: ReadonlySet<string> = new Set<CollectionName>([
  'functional_annotation_agg',
  'functional_annotation_set',
  'genome_feature_set',
]);

/** Collections whose records are planned processes (`/planned_processes`, 1.2.0 `/activities`). */
export const PLANNED_PROCESS_COLLECTIONS: CollectionName[] = [
  'collecting_biosamples_from_site_set',
  'data_generation_set',
  'material_processing_set',
  'storage_process_set',
  'workflow_execution_set',
];

export interface Typecode {
  /** e.g. `sty` */
  name: string;
  /** e.g. `nmdc:Study` */
  schemaClass: string;
  collection: CollectionName;
}

const T = (name: string, cls: string, collection: CollectionName): Typecode => ({
  name,
  schemaClass: `nmdc:${cls}`,
  collection,
});

/** Id typecodes (`nmdc:<typecode>-<shoulder>-<blade>`) and the class and collection they belong to. */
export const TYPECODES: Typecode[] = [
  T('sty', 'Study', 'study_set'),
  T('bsm', 'Biosample', 'biosample_set'),
  T('dobj', 'DataObject', 'data_object_set'),
  T('dgns', 'NucleotideSequencing', 'data_generation_set'),
  T('dgms', 'MassSpectrometry', 'data_generation_set'),
  T('omprc', 'DataGeneration', 'data_generation_set'),
  T('extrp', 'Extraction', 'material_processing_set'),
  T('filtpr', 'FiltrationProcess', 'material_processing_set'),
  T('dispro', 'DissolvingProcess', 'material_processing_set'),
  T('poolp', 'Pooling', 'material_processing_set'),
  T('libprp', 'LibraryPreparation', 'material_processing_set'),
  T('subspr', 'SubSamplingProcess', 'material_processing_set'),
  T('mixpro', 'MixingProcess', 'material_processing_set'),
  T('chcpr', 'ChemicalConversionProcess', 'material_processing_set'),
  T('cspro', 'ChromatographicSeparationProcess', 'material_processing_set'),
  T('wfmag', 'MagsAnalysis', 'workflow_execution_set'),
  T('wfmb', 'MetabolomicsAnalysis', 'workflow_execution_set'),
  T('wfmgan', 'MetagenomeAnnotation', 'workflow_execution_set'),
  T('wfmgas', 'MetagenomeAssembly', 'workflow_execution_set'),
  T('wfmsa', 'MetagenomeSequencing', 'workflow_execution_set'),
  T('wfmp', 'MetaproteomicsAnalysis', 'workflow_execution_set'),
  T('wfmt', 'MetatranscriptomeExpressionAnalysis', 'workflow_execution_set'),
  T('wfmtan', 'MetatranscriptomeAnnotation', 'workflow_execution_set'),
  T('wfmtas', 'MetatranscriptomeAssembly', 'workflow_execution_set'),
  T('wfmtex', 'MetatranscriptomeExpressionAnalysis', 'workflow_execution_set'),
  T('wfnom', 'NomAnalysis', 'workflow_execution_set'),
  T('wfrbt', 'ReadBasedTaxonomyAnalysis', 'workflow_execution_set'),
  T('wfrqc', 'ReadQcAnalysis', 'workflow_execution_set'),
  T('procsm', 'ProcessedSample', 'processed_sample_set'),
  T('frsite', 'FieldResearchSite', 'field_research_site_set'),
  T('inst', 'Instrument', 'instrument_set'),
  T('calib', 'CalibrationInformation', 'calibration_set'),
  T('manif', 'Manifest', 'manifest_set'),
  T('storpr', 'StorageProcess', 'storage_process_set'),
  T('osm', 'OrganismSample', 'organism_sample_set'),
  T('orgn', 'Organism', 'organism_set'),
  T('mscon', 'MassSpectrometryConfiguration', 'configuration_set'),
  T('chrcon', 'ChromatographyConfiguration', 'configuration_set'),
];

/** The id shape every record id must have. */
export const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.]+:[a-zA-Z0-9_][a-zA-Z0-9_\-/.,]*$/;

/** The collection an id belongs in by its typecode (`nmdc:bsm-11-x` -> biosample_set), if known. */
export function isTypecode(name: string): boolean {
  return TYPECODES.some((t) => t.name === name);
}

export function collectionOfId(id: string): CollectionName | undefined {
  const m = /^nmdc:([a-z]+)-/.exec(id);
  return m ? TYPECODES.find((t) => t.name === m[1])?.collection : undefined;
}
