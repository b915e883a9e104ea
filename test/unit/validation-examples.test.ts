/**
 * MetadataValidator on real-shaped records: the NMDC schema repository's own valid and invalid
 * example data (v11.23.0, converted to Database JSON; see test/fixtures/nmdc-schema-examples/SOURCE.md),
 * the demo data set and generated data.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MetadataValidator } from '../../src/validation/index.ts';
import { collectionOfId, COLLECTION_NAMES } from '../../src/schema/nmdc.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { DEMO_DATA_SET } from '../../src/startup.ts';
import type { Doc, DocumentStore, Filter } from '../../src/store/port.ts';

const DIR = path.join(import.meta.dirname, '../fixtures/nmdc-schema-examples');
const read = (file: string) =>
  JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as Record<string, unknown>;
const examples = (kind: 'valid' | 'invalid') =>
  fs
    .readdirSync(path.join(DIR, kind))
    .filter((f) => f.endsWith('.json'))
    .sort();
const MISSING = read('missing-references.json') as unknown as Record<string, string[]>;

/** A store holding records with these ids, each in the collection its typecode names (else in every one). */
function storeHolding(ids: Iterable<string> = []): DocumentStore {
  const held = new Map<string, Set<string>>();
  for (const id of ids)
    for (const c of collectionOfId(id) ? [collectionOfId(id)!] : COLLECTION_NAMES) {
      if (!held.has(c)) held.set(c, new Set());
      held.get(c)!.add(id);
    }
  return {
    find: async (collection: string, filter: Filter) =>
      (filter as { id: { $in: string[] } }).id.$in
        .filter((id) => held.get(collection)?.has(id))
        .map((id) => ({ id }) as Doc),
  } as unknown as DocumentStore;
}

const REFERENCE = /references a document having id '([^']*)'/;

/** Invalid examples JSON cannot express (a YAML timestamp that is not a string): see SOURCE.md. */
const NOT_EXPRESSIBLE_IN_JSON = [
  'Database-plannedprocess-non-string-end_datet.json',
  'NomAnalysis-non-string-ended_at_time.json',
];

/** Where each Database-level invalid example breaks the schema (the place its own comments name). */
const DATABASE_EXAMPLE_PLACES: Record<string, string> = {
  'Database-Biosample-invalid_id.json': "does not match '^(nmdc):bsm-",
  'Database-Biosample-missing_longitude.json':
    "'longitude' is a required property in /biosample_set/0/lat_lon",
  'Database-Isolation-bad-output.json': 'in /material_processing_set/0/has_output/0',
  'Database-MetabolomicsAnalysis-no_metabolomics_category.json':
    "'metabolomics_analysis_category' is a required property in /workflow_execution_set/0",
  'Database-ReadQcAnalysisActivity-invalid.json':
    "'has_output' is a required property in /workflow_execution_set/0",
  'Database-WorkflowExecution-was-informed-by-not-a-list.json':
    "is not of type 'array' in /workflow_execution_set/0/was_informed_by",
  'Database-WorkflowExecutionActivity-invalid.json': "'activity_set' is not a known schema collection name",
  'Database-biosample_gold_id_list_as_primary_key.json': "is not of type 'string' in /biosample_set/0/id",
  'Database-biosample_undeclared_slot.json': "('foo' was unexpected) in /biosample_set/0",
  'Database-biosamples-lat_lon-with-GLV-missing-latitude.json':
    "'latitude' is a required property in /biosample_set/0/lat_lon",
  'Database-biosamples-lat_lon-with-GLV-missing-longitude.json':
    "'longitude' is a required property in /biosample_set/0/lat_lon",
  'Database-functional_annotation_agg-missing_gene_function_id.json':
    "'gene_function_id' is a required property in /functional_annotation_agg/0",
  'Database-invalid-functional-annotation.json': 'in /functional_annotation_set/0/has_function',
  'Database-invalid_calibration_slot.json': "('has_calibration' was unexpected) in /data_generation_set/0",
  'Database-mags-img_identifiers-exceeds-cardinality.json':
    'is too long (at most 1) in /workflow_execution_set/0/img_identifiers',
  'Database-metatranscriptome_workflow-invalidDatabase.json':
    "'metagenome_assembly_set' is not a known schema collection name",
  'Database-polymorphic-invalid-typed-LibraryPreparation.json':
    "'nmdc:UndefinedClass' is not one of ['nmdc:Pooling', 'nmdc:Isolation'",
  'Database-studies-legacy-gold-study-id.json': "'gold:Gs0110132' does not match '^(nmdc):sty-",
  'Database-studies-missing-study_category.json': "'study_category' is a required property in /study_set/0",
  'Database-studies-undefined-doi-slot.json': "('doi' was unexpected) in /study_set/0",
  'Database-studies-undefined-foo-slot.json': "('foo' was unexpected) in /study_set/0",
  'Database-studies-undefined-principal_investigator_name-slot.json':
    "('principal_investigator_name' was unexpected) in /study_set/0",
  'Database-study-include-abstract.json': "('abstract' was unexpected) in /study_set/0",
  'Database-study_set-bad-emsl-doi-slot-name.json': "('emsl_proposal_dois' was unexpected) in /study_set/0",
  'Database-using-undefined-analytical_sample_set-slot.json':
    "'analytical_sample_set' is not a known schema collection name",
  'Database-with-deprecated-MetagenomeSequencing.json': "'nmdc:MetagenomeSequencing' is not one of",
  'Database_processed-sample-bad-portion.json': 'in /processed_sample_set/0/sampled_portion/0',
};

describe('the nmdc-schema example data', () => {
  it('has the examples SOURCE.md describes', () => {
    expect(examples('valid').length).toBeGreaterThanOrEqual(30);
    expect(
      examples('invalid')
        .filter((f) => f.startsWith('Database'))
        .sort(),
    ).toEqual(
      [...Object.keys(DATABASE_EXAMPLE_PLACES), 'Database-plannedprocess-non-string-end_datet.json'].sort(),
    );
  });

  it.each(examples('valid'))(
    'valid/%s validates (references: exactly the ids it lacks, found once stored)',
    async (file) => {
      const payload = read(`valid/${file}`);
      const missing = MISSING[file] ?? [];
      const alone = await new MetadataValidator(storeHolding()).validateDatabase(payload);
      if (missing.length === 0) expect(alone).toEqual({ valid: true });
      else {
        expect(alone.valid).toBe(false);
        const messages = alone.valid ? [] : Object.values(alone.detail).flat();
        expect(messages.every((m) => REFERENCE.test(m))).toBe(true);
        expect([...new Set(messages.map((m) => REFERENCE.exec(m)![1]!))].sort()).toEqual(missing);
        expect(await new MetadataValidator(storeHolding(missing)).validateDatabase(payload)).toEqual({
          valid: true,
        });
      }
    },
  );

  it.each(examples('invalid').filter((f) => !NOT_EXPRESSIBLE_IN_JSON.includes(f)))(
    'invalid/%s is rejected, each message naming its place',
    async (file) => {
      const payload = read(`invalid/${file}`);
      const outcome = await new MetadataValidator(storeHolding()).validateDatabase(payload);
      expect(outcome.valid).toBe(false);
      const messages = outcome.valid
        ? []
        : Object.entries(outcome.detail).flatMap(([c, ms]) => ms.map((m) => [c, m]));
      expect(messages.length).toBeGreaterThan(0);
      for (const [collection, message] of messages) {
        // Either the key itself is the problem, or the message points into the collection.
        if (message === `'${collection}' is not a known schema collection name`) continue;
        expect(message).toMatch(new RegExp(` (in|at) /${collection}(/|\\b)`));
      }
      const place = DATABASE_EXAMPLE_PLACES[file];
      if (place) expect(messages.map(([, m]) => m).join('\n')).toContain(place);
    },
  );

  it.each(NOT_EXPRESSIBLE_IN_JSON)(
    'invalid/%s is valid once in JSON (its only flaw is a YAML timestamp)',
    async (file) => {
      const outcome = await new MetadataValidator(storeHolding()).validateDatabase(read(`invalid/${file}`));
      const messages = outcome.valid ? [] : Object.values(outcome.detail).flat();
      expect(messages.every((m) => REFERENCE.test(m))).toBe(true);
    },
  );
});

describe('generated data', () => {
  it('the demo data set validates clean (schema and references) against an empty store', async () => {
    const outcome = await new MetadataValidator(storeHolding()).validateDatabase(
      generateDatabase(DEMO_DATA_SET),
    );
    expect(outcome).toEqual({ valid: true });
  });

  it('a generated set with skewed studies, partial pipelines and unlinked data objects validates clean', async () => {
    const db = generateDatabase({
      studies: 7,
      biosamples: 120,
      dataObjects: 4000,
      seed: 3,
      largestStudyBiosamples: 40,
    });
    expect(db.data_object_set!.some((d) => d.was_generated_by === undefined)).toBe(true);
    expect(await new MetadataValidator(storeHolding()).validateDatabase(db)).toEqual({ valid: true });
  });

  it('keeps the demo ids the documentation uses', () => {
    const db = generateDatabase(DEMO_DATA_SET);
    const ids = new Set(Object.values(db).flatMap((docs) => docs.map((d) => d.id)));
    for (const id of ['nmdc:sty-11-02g8ftqk', 'nmdc:bsm-11-02g8ftqk', 'nmdc:wfmgas-11-02g8ftqk.1'])
      expect(ids.has(id)).toBe(true);
  });
});
