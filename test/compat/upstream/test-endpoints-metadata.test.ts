/**
 * Port of the original's tests/test_api/test_endpoints.py (v2.13.0), part 2 of 4: validating and
 * submitting metadata (`/metadata/json:*`, changesheets, `POST /workflows/workflow_executions`),
 * the collection of an id, and planned processes.
 */
import { describe, expect, it } from 'vitest';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker, type Record_ } from './support/faker.ts';
import { plainRequest } from './support/client.ts';
import { fixtureJson, uploadChangesheet } from './support/files.ts';

let server: UpstreamServer;
const faker = new Faker();

withUpstreamServer((started) => (server = started));

const validate = async (database: Record<string, unknown>) =>
  (await server.siteClient().request('POST', '/metadata/json:validate', database)).json;

describe('tests/test_api/test_endpoints.py: metadata', () => {
  it('test_endpoints.py::test_metadata_validate_json_0', async () => {
    const site = { id: 'nmdc:frsite-11-s2dqk408', name: 'BESC-470-CL2_38_23' };
    const rv = await validate({ field_research_site_set: [site, site, site] });
    expect(rv.result).toBe('errors');
    expect(rv.detail.field_research_site_set.join('\n')).toContain('nmdc:frsite-11-s2dqk408');
  });

  it('test_endpoints.py::test_metadata_validate_json_empty_collection', async () => {
    expect((await validate({ study_set: [] })).result).not.toBe('errors');
  });

  it('test_endpoints.py::test_metadata_validate_json_with_type_attribute', async () => {
    expect((await validate({ study_set: [], '@type': 'Database' })).result).not.toBe('errors');
    expect((await validate({ study_set: [], '@type': 'nmdc:Database' })).result).not.toBe('errors');
  });

  it('test_endpoints.py::test_metadata_validate_json_with_unknown_collection', async () => {
    const rv = await validate({ studi_set: [] });
    expect(rv.result).toBe('errors');
    expect(rv.detail.studi_set).toEqual(["'studi_set' is not a known schema collection name"]);
  });

  it('test_endpoints.py::test_metadata_json_submit_rejects_document_containing_broken_reference', async () => {
    const nonexistent = 'nmdc:sty-00-000001';
    const mine = 'nmdc:sty-00-000002';
    expect(await server.count('study_set', { id: { $in: [mine, nonexistent] } })).toBe(0);
    const [study] = faker.studies(1, { id: mine, part_of: [nonexistent] });
    await server.allow(TEST_USER.username, '/metadata/json:submit');

    const response = await server
      .userClient()
      .failing('POST', '/metadata/json:submit', { study_set: [study] });
    expect(response.status).toBe(422);
    // As the original: `detail` is a string, the Python text of the validation answer.
    const detail = response.json.detail;
    expect(typeof detail).toBe('string');
    expect(detail).toContain('errors');
    expect(detail).toContain('study_set');
    expect(detail).toContain('part_of');
    expect(await server.count('study_set', { id: mine })).toBe(0);
  });

  it('test_endpoints.py::test_submit_changesheet', async () => {
    // The original calls its changesheet functions (read, validate) and keeps the sheet as a DRS
    // object; here the same steps through the endpoints: validate, then submit, which keeps it.
    const text =
      'id\taction\tattribute\tvalue\nnmdc:bsm-12-7mysck21\tupdate\tassociated_studies\tnmdc:sty-11-pzmd0x14\n';
    await server.add('biosample_set', [fixtureJson('nmdc_bsm-12-7mysck21.json')]);
    await server.add('study_set', [fixtureJson('nmdc_sty-11-pzmd0x14.json')]);

    const validated = await uploadChangesheet(server.url, 'validate', 'sheet', text);
    expect(validated.status, validated.text).toBe(200);
    expect(validated.json.results_of_updates[0].doc_after.associated_studies).toEqual([
      'nmdc:sty-11-pzmd0x14',
    ]);

    await server.allow(TEST_USER.username, '/metadata/changesheets:submit');
    const submitted = await uploadChangesheet(
      server.url,
      'submit',
      'sheet',
      text,
      await server.userClient().headers(),
    );
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.json).toMatchObject({ name: 'sheet', description: 'changesheet' });
    const object = await plainRequest(server.url, 'GET', `/objects/${submitted.json.id}`);
    expect(object.status).toBe(200);
    expect(object.json.size).toBe(Buffer.byteLength(text));
    expect((await server.get('biosample_set', 'nmdc:bsm-12-7mysck21'))!.associated_studies).toEqual([
      'nmdc:sty-11-pzmd0x14',
    ]);
  });

  it('test_endpoints.py::test_post_workflows_workflow_executions_inserts_submitted_document', async () => {
    const [study] = faker.studies(1) as [Record_];
    const [biosample] = faker.biosamples(1, [study.id]) as [Record_];
    const [a, b] = faker.dataObjects(2) as [Record_, Record_];
    const [dataGeneration] = faker.nucleotideSequencings(1, [study.id], [biosample.id]) as [Record_];
    const [execution] = faker.metagenomeAnnotations(1, [dataGeneration.id], [a.id], {
      has_output: [b.id],
    }) as [Record_];
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(0);
    await server.add('study_set', [study]);
    await server.add('biosample_set', [biosample]);
    await server.add('data_object_set', [a, b]);
    await server.add('data_generation_set', [dataGeneration]);

    const response = await server
      .siteClient()
      .request('POST', '/workflows/workflow_executions', { workflow_execution_set: [execution] });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ message: 'jobs accepted' });
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(1);
    await server.remove('workflow_execution_set', [execution.id]);
  });

  it('test_endpoints.py::test_post_workflows_workflow_executions_rejects_document_containing_broken_reference', async () => {
    const nonexistent = 'nmdc:dgns-00-000001';
    const [a, b] = faker.dataObjects(2) as [Record_, Record_];
    const [execution] = faker.metagenomeAnnotations(1, [nonexistent], [a.id], { has_output: [b.id] }) as [
      Record_,
    ];
    expect(await server.count('data_generation_set', { id: nonexistent })).toBe(0);
    await server.add('data_object_set', [a, b]);

    const response = await server
      .siteClient()
      .failing('POST', '/workflows/workflow_executions', { workflow_execution_set: [execution] });
    expect(response.status).toBe(422);
    const detail = response.json.detail;
    expect(typeof detail).toBe('string');
    expect(detail).toContain('errors');
    expect(detail).toContain('workflow_execution_set');
    expect(detail).toContain('was_informed_by');
    expect(detail).not.toContain('has_input');
    expect(detail).not.toContain('has_output');
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(0);
  });

  it('test_endpoints.py::test_get_class_name_and_collection_names_by_doc_id', async () => {
    const study = { id: 'nmdc:sty-1-foobar', type: 'nmdc:Study' };
    await server.add('study_set', [study]);

    const found = await plainRequest(server.url, 'GET', `/nmdcschema/ids/${study.id}/collection-name`);
    expect(found.status).toBe(200);
    expect(found.json.id).toBe(study.id);
    expect(found.json.collection_name).toBe('study_set');

    // A valid id of no stored record, and an id whose typecode does not exist.
    for (const id of ['nmdc:sty-1-bazqux', 'nmdc:foo-1-foobar']) {
      const missing = await plainRequest(server.url, 'GET', `/nmdcschema/ids/${id}/collection-name`);
      expect(missing.status, id).toBe(404);
      expect(typeof missing.json.detail).toBe('string');
    }
  });
});

describe('tests/test_api/test_endpoints.py: planned processes', () => {
  /** The planned processes of the original's fixture file, stored. */
  async function seedPlannedProcesses(): Promise<Record<string, Record_[]>> {
    const database = fixtureJson<Record<string, Record_[]>>('planned_processes.json');
    for (const [collection, docs] of Object.entries(database)) await server.add(collection, docs);
    return database;
  }

  it('test_endpoints.py::test_find_planned_processes', async () => {
    const database = await seedPlannedProcesses();
    const seeded = Object.values(database).flat().length;
    expect(seeded).toBeGreaterThanOrEqual(9);
    const rv = await server.siteClient().request('GET', '/planned_processes');
    expect(rv.json.meta.count).toBeGreaterThanOrEqual(9);
    expect(rv.json.meta.count).toBe(seeded);
  });

  it('test_endpoints.py::test_find_planned_process_by_id', async () => {
    await seedPlannedProcesses();
    // A study, not a planned process: the endpoint must not find it.
    await server.add('study_set', [{ id: 'nmdc:sty-1-foobar', type: 'nmdc:Study' }]);
    const client = server.siteClient();

    const rv = await client.request('GET', '/planned_processes/nmdc:wfmag-11-00jn7876.1');
    expect(rv.json).not.toHaveProperty('_id');
    expect(rv.json.id).toBe('nmdc:wfmag-11-00jn7876.1');

    const unknown = await client.failing('GET', '/planned_processes/nmdc:wfmag-11-00jn7876.99');
    expect(unknown.status).toBe(404);
    const notAProcess = await client.failing('GET', '/planned_processes/nmdc:sty-11-00000001');
    expect(notAProcess.status).toBe(404);
    const theStudy = await client.failing('GET', '/planned_processes/nmdc:sty-1-foobar');
    expect(theStudy.status).toBe(404);
  });
});
