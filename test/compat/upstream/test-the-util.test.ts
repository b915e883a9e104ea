/**
 * Port of the original's tests/test_the_util/test_the_util.py (v2.13.0). Its `validate_json` tests
 * run here through `POST /metadata/json:validate`, which (as the original's endpoint) checks
 * references; the calls the original makes with references unchecked exercise a flag of that Python
 * function that no endpoint offers, and are not repeated. The class-to-collection test checks the
 * schema the service vendors. Tests of Python helpers, pymongo transactions and MongoDB indexes
 * are listed in README.md with the reason.
 */
import { describe, expect, it } from 'vitest';
import { schemaView, slotOf } from '../../../src/schema/schema-view.ts';
import { classAndDescendants } from '../../../src/schema/class-tree.ts';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { plainRequest } from './support/client.ts';

let server: UpstreamServer;

withUpstreamServer((started) => (server = started));

const OK = { result: 'All Okay!' };

/** `validate_json(in_docs, mdb, check_inter_document_references=True)`, over HTTP. */
async function validateJson(database: Record<string, unknown>) {
  const res = await plainRequest(server.url, 'POST', '/metadata/json:validate', { json: database });
  expect(res.status, res.text).toBe(200);
  return res.json;
}

const study = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  type: 'nmdc:Study',
  study_category: 'research_study',
  ...extra,
});

/** An ENVO term of the shape the original's payloads use (no raw value, no name). */
const term = () => ({
  term: { type: 'nmdc:OntologyClass', id: 'ENVO:000000' },
  type: 'nmdc:ControlledIdentifiedTermValue',
});

describe('tests/test_the_util/test_the_util.py', () => {
  it('test_the_util.py::test_validate_json_returns_valid_when_input_is_empty_dictionary', async () => {
    expect(await validateJson({})).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_returns_valid_when_collection_is_empty_list', async () => {
    expect(await validateJson({ study_set: [] })).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_returns_invalid_when_collection_name_is_schema_defiant', async () => {
    const result = await validateJson({ OTHER_set: [] });
    expect(result.result).toBe('errors');
    expect(result.detail.OTHER_set).toHaveLength(1);
  });

  it('test_the_util.py::test_validate_json_returns_valid_when_payload_has_multiple_empty_collections', async () => {
    expect(await validateJson({ biosample_set: [], study_set: [] })).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_returns_valid_when_the_only_document_is_schema_compliant', async () => {
    expect(await validateJson({ study_set: [study('nmdc:sty-00-000001')] })).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_returns_valid_when_all_documents_are_schema_compliant', async () => {
    expect(
      await validateJson({ study_set: [study('nmdc:sty-00-000001'), study('nmdc:sty-00-000002')] }),
    ).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_returns_invalid_when_document_is_schema_defiant', async () => {
    const result = await validateJson({ study_set: [study('nmdc:OTHER-00-000001')] });
    expect(result.result).toBe('errors');
    expect(result.detail.study_set).toHaveLength(1);
  });

  it('test_the_util.py::test_validate_json_returns_invalid_when_otherwise_schema_compliant_document_references_missing_document', async () => {
    const result = await validateJson({
      study_set: [study('nmdc:sty-00-000001', { part_of: ['nmdc:sty-00-999999'] })],
    });
    expect(result.result).toBe('errors');
    expect(result.detail.study_set).toHaveLength(1);
    expect(result.detail.study_set[0]).toContain('nmdc:sty-00-000001');
  });

  it('test_the_util.py::test_validate_json_does_not_check_references_if_documents_are_schema_defiant', async () => {
    const result = await validateJson({
      study_set: [study('nmdc:OTHER-00-000001', { part_of: ['nmdc:sty-00-000009'] })],
    });
    expect(result.result).toBe('errors');
    expect(result.detail).toHaveProperty('study_set');
    // The schema error only: references are not checked (not 2).
    expect(result.detail.study_set).toHaveLength(1);
  });

  it('test_the_util.py::test_validate_json_reports_multiple_broken_references_emanating_from_single_document', async () => {
    const result = await validateJson({
      study_set: [study('nmdc:sty-00-000001', { part_of: ['nmdc:sty-00-000008', 'nmdc:sty-00-000009'] })],
    });
    expect(result.result).toBe('errors');
    expect(result.detail).toHaveProperty('study_set');
    expect(result.detail.study_set).toHaveLength(2);
  });

  it('test_the_util.py::test_validate_json_checks_referential_integrity_after_applying_all_collections_changes', async () => {
    const biosample = {
      id: 'nmdc:bsm-00-000001',
      type: 'nmdc:Biosample',
      associated_studies: ['nmdc:sty-00-000001'],
      env_broad_scale: term(),
      env_local_scale: term(),
      env_medium: term(),
    };
    const studies = [
      study('nmdc:sty-00-000001'),
      study('nmdc:sty-00-000002', { part_of: ['nmdc:sty-00-000001'] }),
    ];
    // Schema 11.23 (vendored here) requires a biosample's `name`; 11.14 (the original 2.13.0's) did
    // not. The payload as the original writes it fails on that alone, not on its references...
    expect(await validateJson({ biosample_set: [biosample], study_set: studies })).toEqual({
      result: 'errors',
      detail: {
        biosample_set: ["'name' is a required property in /biosample_set/0 (id 'nmdc:bsm-00-000001')"],
        study_set: [],
      },
    });
    // ...and with a name, the references that the payload itself satisfies across collections pass.
    expect(
      await validateJson({ biosample_set: [{ ...biosample, name: 'Sample one' }], study_set: studies }),
    ).toEqual(OK);
  });

  it('test_the_util.py::test_validate_json_considers_existing_documents_when_checking_references', async () => {
    const existing = 'nmdc:sty-00-000001';
    await server.add('study_set', [study(existing)]);
    expect(await validateJson({ study_set: [study('nmdc:sty-00-000002', { part_of: [existing] })] })).toEqual(
      OK,
    );
    // Without the stored study the same payload has a broken reference.
    await server.cleanup();
    const broken = await validateJson({ study_set: [study('nmdc:sty-00-000002', { part_of: [existing] })] });
    expect(broken.result).toBe('errors');
    expect(broken.detail.study_set).toHaveLength(1);
  });

  it('test_the_util.py::test_get_class_name_to_collection_names_map_has_one_and_only_one_collection_name_per_class_name', () => {
    // Every class whose instances a collection of the schema's Database holds (each collection's
    // range and its descendants) belongs to exactly one collection.
    const collectionsOf = new Map<string, string[]>();
    for (const collection of schemaView().classes.Database?.slots ?? []) {
      const range = slotOf('Database', collection).range;
      if (!range || !schemaView().classes[range]) continue;
      for (const className of classAndDescendants(`nmdc:${range}`)) {
        collectionsOf.set(className, [...(collectionsOf.get(className) ?? []), collection]);
      }
    }
    expect(collectionsOf.size).toBeGreaterThan(40);
    for (const [className, collections] of collectionsOf) expect(collections, className).toHaveLength(1);
    expect(collectionsOf.get('nmdc:NucleotideSequencing')).toEqual(['data_generation_set']);
    expect(collectionsOf.get('nmdc:MetagenomeAnnotation')).toEqual(['workflow_execution_set']);
  });
});
