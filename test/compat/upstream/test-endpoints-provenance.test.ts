/**
 * Port of the original's tests/test_api/test_endpoints.py (v2.13.0), part 1 of 4: the provenance
 * endpoints (`/nmdcschema/linked_instances`, `/data_objects/study/{study_id}`,
 * `/workflow_executions/{id}/related_resources`). The original refreshes its `alldocs` copy of the
 * graph after seeding; here the edges are written with the records, so there is nothing to refresh.
 */
import { describe, expect, it } from 'vitest';
import { withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker, type Record_ } from './support/faker.ts';
import { plainRequest } from './support/client.ts';

let server: UpstreamServer;
const faker = new Faker();

withUpstreamServer((started) => (server = started));

const ids = (records: Array<{ id: string }>) => new Set(records.map((r) => r.id));

/** The fixture `fake_studies_and_biosamples_in_mdb`: study B part of study A, a biosample of each. */
async function fakeStudiesAndBiosamples(): Promise<[Record_, Record_, Record_, Record_]> {
  const [studyA] = faker.studies(1) as [Record_];
  const [studyB] = faker.studies(1, { part_of: [studyA.id] }) as [Record_];
  const [biosampleA] = faker.biosamples(1, [studyA.id]) as [Record_];
  const [biosampleB] = faker.biosamples(1, [studyB.id]) as [Record_];
  expect(await server.count('study_set', { id: { $in: [studyA.id, studyB.id] } })).toBe(0);
  expect(await server.count('biosample_set', { id: { $in: [biosampleA.id, biosampleB.id] } })).toBe(0);
  await server.add('study_set', [studyA, studyB]);
  await server.add('biosample_set', [biosampleA, biosampleB]);
  return [studyA, studyB, biosampleA, biosampleB];
}

describe('tests/test_api/test_endpoints.py: linked instances', () => {
  it('test_endpoints.py::test_get_linked_instances_returns_unsuccessful_status_code_when_any_subject_does_not_exist', async () => {
    const [study] = faker.studies(1, { part_of: [] }) as [Record_];
    await server.add('study_set', [study]);
    const missing = 'nmdc:sty-00-00000x';
    expect(await server.count('study_set', { id: missing })).toBe(0);
    const client = server.userClient();

    const alone = await client.failing('GET', `/nmdcschema/linked_instances/?ids=${missing}`);
    expect(alone.status).toBe(404);
    expect(alone.json.detail).toContain(missing);

    expect(await server.count('study_set', { id: study.id })).toBe(1);
    const both = await client.failing('GET', `/nmdcschema/linked_instances/?ids=${study.id}&ids=${missing}`);
    expect(both.status).toBe(404);
    expect(both.json.detail).toContain(missing);
    expect(both.json.detail).not.toContain(study.id);
  });

  it('test_endpoints.py::test_get_linked_instances_returns_empty_resources_list_for_isolated_subject', async () => {
    const [study] = faker.studies(1, { part_of: [] }) as [Record_];
    await server.add('study_set', [study]);
    const res = await server.userClient().request('GET', `/nmdcschema/linked_instances/?ids=${study.id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ resources: [] });
  });

  it('test_endpoints.py::test_get_linked_instances_returns_linked_instances', async () => {
    const [studyA, studyB, biosampleA, biosampleB] = await fakeStudiesAndBiosamples();
    const client = server.userClient();

    // Study A is upstream of study B and both biosamples, downstream of nothing.
    let resources = (await client.request('GET', `/nmdcschema/linked_instances?ids=${studyA.id}`)).json
      .resources as Array<Record<string, unknown> & { id: string }>;
    expect(ids(resources)).toEqual(new Set([studyB.id, biosampleA.id, biosampleB.id]));
    expect(resources.every((r) => '_downstream_of' in r)).toBe(true);
    expect(resources.some((r) => '_upstream_of' in r)).toBe(false);

    // Study B is upstream of biosample B and downstream of study A.
    resources = (await client.request('GET', `/nmdcschema/linked_instances?ids=${studyB.id}`)).json.resources;
    expect(ids(resources.filter((r) => '_downstream_of' in r))).toEqual(new Set([biosampleB.id]));
    expect(ids(resources.filter((r) => '_upstream_of' in r))).toEqual(new Set([studyA.id]));

    // Biosample A is downstream of study A and upstream of nothing.
    resources = (await client.request('GET', `/nmdcschema/linked_instances?ids=${biosampleA.id}`)).json
      .resources;
    expect(ids(resources.filter((r) => '_upstream_of' in r))).toEqual(new Set([studyA.id]));
    expect(resources.some((r) => '_downstream_of' in r)).toBe(false);
  });

  it('test_endpoints.py::test_get_linked_instances_pagination', async () => {
    // The fixture `docs_study_and_1k_biosamples`.
    const [study] = faker.studies(1, { part_of: [] }) as [Record_];
    const biosamples = faker.biosamples(1000, [study.id]);
    await server.add('study_set', [study]);
    await server.add('biosample_set', biosamples);
    const client = server.userClient();

    const first = await client.request('GET', `/nmdcschema/linked_instances?ids=${study.id}`);
    expect(first.status).toBe(200);
    expect(first.json).toHaveProperty('next_page_token');
    expect(typeof first.json.next_page_token).toBe('string');
    const page1 = ids(first.json.resources);
    expect(page1.size).toBe(20);

    const second = await client.request(
      'GET',
      `/nmdcschema/linked_instances?ids=${study.id}&page_token=${first.json.next_page_token}`,
    );
    expect(second.status).toBe(200);
    const page2 = ids(second.json.resources);
    expect(page2.size).toBe(20);
    expect([...page1].filter((id) => page2.has(id))).toEqual([]);

    const ofBiosample = await client.request('GET', `/nmdcschema/linked_instances?ids=${biosamples[0]!.id}`);
    expect(ofBiosample.status).toBe(200);
    expect(ofBiosample.json).not.toHaveProperty('next_page_token');

    const fake = await client.failing(
      'GET',
      `/nmdcschema/linked_instances?ids=${study.id}&page_token=FAKETOKEN`,
    );
    expect(fake.status).toBe(400);
    expect(fake.json.detail).toMatch(/page_token/);
  });

  it('test_endpoints.py::test_get_linked_instances_hydration', async () => {
    const [studyA] = await fakeStudiesAndBiosamples();
    const client = server.userClient();
    const dry = await client.request(
      'GET',
      `/nmdcschema/linked_instances?ids=${studyA.id}&types=nmdc:Biosample`,
    );
    expect(dry.json.resources).toHaveLength(2);
    expect(dry.json.resources.some((r: object) => 'associated_studies' in r)).toBe(false);
    const hydrated = await client.request(
      'GET',
      `/nmdcschema/linked_instances?ids=${studyA.id}&types=nmdc:Biosample&hydrate=true`,
    );
    expect(hydrated.json.resources).toHaveLength(2);
    expect(hydrated.json.resources.every((r: object) => 'associated_studies' in r)).toBe(true);
  });
});

describe('tests/test_api/test_endpoints.py: TestFindDataObjectsForStudy', () => {
  // Ids the seeder uses and the tests expect.
  const studyId = 'nmdc:sty-00-000001';
  const biosampleId = 'nmdc:bsm-00-000001';
  const dataGenerationId = 'nmdc:dgns-00-000001';
  const dataObjectIds = ['nmdc:dobj-00-000001', 'nmdc:dobj-00-000002', 'nmdc:dobj-00-000003'];
  const workflowExecutionIds = ['nmdc:wfmgan-00-000001', 'nmdc:wfmgan-00-000002'];
  const seedFaker = new Faker();

  /**
   * The class's `seeded_db`: a study, its biosample, a sequencing run of it, and a workflow
   * execution informed by the run, taking the biosample and producing two data objects.
   */
  async function seededDb(): Promise<Record_> {
    const [study] = seedFaker.studies(1, { id: studyId }) as [Record_];
    const [biosample] = seedFaker.biosamples(1, [study.id], { id: biosampleId }) as [Record_];
    const [dataGeneration] = seedFaker.nucleotideSequencings(1, [study.id], [biosample.id], {
      id: dataGenerationId,
    }) as [Record_];
    const [a, b] = seedFaker.dataObjects(2) as [Record_, Record_];
    a.id = dataObjectIds[0]!;
    b.id = dataObjectIds[1]!;
    a.data_category = 'instrument_data';
    b.data_category = 'processed_data';
    const [execution] = seedFaker.metagenomeAnnotations(1, [dataGeneration.id], [biosample.id], {
      id: workflowExecutionIds[0],
      has_output: [a.id, b.id],
    }) as [Record_];
    for (const [collection, record] of [
      ['study_set', study],
      ['biosample_set', biosample],
      ['data_generation_set', dataGeneration],
      ['workflow_execution_set', execution],
    ] as const)
      expect(await server.count(collection, { id: record.id })).toBe(0);
    expect(await server.count('data_object_set', { id: { $in: [a.id, b.id] } })).toBe(0);
    await server.add('study_set', [study]);
    await server.add('biosample_set', [biosample]);
    await server.add('data_generation_set', [dataGeneration]);
    await server.add('data_object_set', [a, b]);
    await server.add('workflow_execution_set', [execution]);
    return execution;
  }

  /** The one group the study's answer must hold: its biosample, and its data objects' ids. */
  async function dataObjectsOfTheBiosample(): Promise<string[]> {
    const res = await server.siteClient().request('GET', `/data_objects/study/${studyId}`);
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(1);
    expect(res.json[0].biosample_id).toBe(biosampleId);
    return res.json[0].data_objects.map((d: { id: string }) => d.id);
  }

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_returns_404_error_for_nonexistent_study', async () => {
    const missing = 'nmdc:sty-11-fake';
    expect(await server.count('study_set', { id: missing })).toBe(0);
    const res = await server.siteClient().failing('GET', `/data_objects/study/${missing}`);
    expect(res.status).toBe(404);
    expect(res.json.detail).toBe('Study not found');
  });

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_returns_empty_list_for_study_having_no_data_objects', async () => {
    const [study] = faker.studies(1) as [Record_];
    expect(await server.count('study_set', { id: study.id })).toBe(0);
    await server.add('study_set', [study]);
    const res = await server.siteClient().request('GET', `/data_objects/study/${study.id}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual([]);
  });

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_returns_one_data_object_for_study_having_one', async () => {
    const execution = await seededDb();
    // Only the first data object stays an output of the workflow execution.
    await server.add('workflow_execution_set', [{ ...execution, has_output: [dataObjectIds[0]] }]);
    const res = await server.siteClient().request('GET', `/data_objects/study/${studyId}`);
    expect(res.status).toBe(200);
    expect(res.json).toHaveLength(1);
    expect(res.json[0].biosample_id).toBe(biosampleId);
    expect(res.json[0].data_objects).toHaveLength(1);
    expect(res.json[0].data_objects[0].id).toBe(dataObjectIds[0]);
  });

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_returns_data_objects_for_study_having_multiple', async () => {
    await seededDb();
    const found = await dataObjectsOfTheBiosample();
    expect(found).toHaveLength(2);
    expect(new Set(found)).toEqual(new Set(dataObjectIds.slice(0, 2)));
  });

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_traverses_multiple_stages_of_workflow_executions', async () => {
    await seededDb();
    // `seeded_db_with_multi_stage_wfe`: a second execution takes the first's output and makes a third object.
    const [c] = seedFaker.dataObjects(1, { id: dataObjectIds[2] }) as [Record_];
    const [second] = seedFaker.metagenomeAnnotations(1, [dataGenerationId], [dataObjectIds[0]!], {
      id: workflowExecutionIds[1],
      has_output: [c.id],
    }) as [Record_];
    expect(await server.count('workflow_execution_set', { id: second.id })).toBe(0);
    await server.add('workflow_execution_set', [second]);
    expect(await server.count('data_object_set', { id: c.id })).toBe(0);
    await server.add('data_object_set', [c]);

    for (const id of workflowExecutionIds)
      expect(await server.count('workflow_execution_set', { id })).toBe(1);
    for (const id of dataObjectIds) expect(await server.count('data_object_set', { id })).toBe(1);
    const found = await dataObjectsOfTheBiosample();
    expect(found).toHaveLength(3);
    for (const id of dataObjectIds) expect(found).toContain(id);
  });

  /**
   * The two chain fixtures (`seeded_db_with_data_object_chain`, `seeded_db_with_informed_by_workflow`):
   * the biosample sequenced again (`sequencingId`) into raw data (`rawId`), annotated (informed by
   * that sequencing, taking the raw data) into a result (`resultId`). Answers the data objects the
   * study's one biosample group then holds.
   */
  async function chain(sequencingId: string, rawId: string, annotationId: string, resultId: string) {
    await seededDb();
    const [raw] = seedFaker.dataObjects(1, { id: rawId, data_category: 'instrument_data' }) as [Record_];
    const [sequencing] = seedFaker.nucleotideSequencings(1, [studyId], [biosampleId], {
      id: sequencingId,
      has_output: [raw.id],
    }) as [Record_];
    const [result] = seedFaker.dataObjects(1, { id: resultId, data_category: 'processed_data' }) as [Record_];
    const [annotation] = seedFaker.metagenomeAnnotations(1, [sequencing.id], [raw.id], {
      id: annotationId,
      has_output: [result.id],
    }) as [Record_];
    await server.add('data_generation_set', [sequencing]);
    await server.add('workflow_execution_set', [annotation]);
    await server.add('data_object_set', [raw, result]);
    return dataObjectsOfTheBiosample();
  }

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_finds_data_objects_in_chain_where_data_objects_are_inputs', async () => {
    const found = await chain(
      'nmdc:ntseq-00-000001',
      'nmdc:dobj-00-000004',
      'nmdc:wfmgan-00-000001.1',
      'nmdc:dobj-00-000005',
    );
    expect(found).toHaveLength(4);
    expect(new Set(found)).toEqual(
      new Set([dataObjectIds[0], dataObjectIds[1], 'nmdc:dobj-00-000004', 'nmdc:dobj-00-000005']),
    );
  });

  it('test_endpoints.py::TestFindDataObjectsForStudy::test_it_finds_data_objects_via_informed_by_workflow_linking', async () => {
    const found = await chain(
      'nmdc:ntseq-00-000002',
      'nmdc:dobj-00-000006',
      'nmdc:wfmgan-00-000002.1',
      'nmdc:dobj-00-000007',
    );
    expect(found).toHaveLength(4);
    expect(new Set(found)).toEqual(
      new Set([dataObjectIds[0], dataObjectIds[1], 'nmdc:dobj-00-000006', 'nmdc:dobj-00-000007']),
    );
  });
});

describe('tests/test_api/test_endpoints.py: related resources', () => {
  const relatedResources = (id: string) =>
    plainRequest(server.url, 'GET', `/workflow_executions/${id}/related_resources`);

  it('test_endpoints.py::test_find_related_resources_for_workflow_execution__returns_404_if_wfe_nonexistent', async () => {
    const id = 'nmdc:wfe-00-000000';
    expect(await server.count('workflow_execution_set', { id })).toBe(0);
    const res = await relatedResources(id);
    expect(res.status).toBe(404);
    expect(res.json.detail).toBe('Workflow execution not found');
  });

  it('test_endpoints.py::test_find_related_resources_for_workflow_execution__returns_related_resources', async () => {
    const [studyA, studyB] = faker.studies(2) as [Record_, Record_];
    const [biosampleA, biosampleB] = faker.biosamples(2, [studyA.id]) as [Record_, Record_];
    const [dataGeneration] = faker.nucleotideSequencings(1, [studyA.id], [biosampleA.id, biosampleB.id]) as [
      Record_,
    ];
    const [dataObject] = faker.dataObjects(1, { was_generated_by: dataGeneration.id }) as [Record_];
    const [execution] = faker.metagenomeAnnotations(1, [dataGeneration.id], [dataObject.id]) as [Record_];
    await server.add('study_set', [studyA, studyB]);
    await server.add('biosample_set', [biosampleA, biosampleB]);
    await server.add('data_generation_set', [dataGeneration]);
    await server.add('data_object_set', [dataObject]);
    await server.add('workflow_execution_set', [execution]);

    const res = await relatedResources(execution.id);
    expect(res.status).toBe(200);
    const body = res.json;
    expect(body.workflow_execution_id).toBe(execution.id);
    expect(body.workflow_execution).toEqual(execution);
    expect(body.data_objects).toHaveLength(1);
    expect(body.data_objects[0].id).toBe(dataObject.id);
    expect(body.related_workflow_executions).toHaveLength(0);
    expect(body.biosamples).toHaveLength(2);
    expect(ids(body.biosamples)).toEqual(new Set([biosampleA.id, biosampleB.id]));
    expect(body.studies).toHaveLength(1);
    expect(body.studies[0].id).toBe(studyA.id);
  });

  it('test_endpoints.py::test_find_related_resources_for_workflow_execution__returns_related_workflow_executions', async () => {
    const [study] = faker.studies(1) as [Record_];
    const [biosample] = faker.biosamples(1, [study.id]) as [Record_];
    const [dataGeneration] = faker.nucleotideSequencings(1, [study.id], [biosample.id]) as [Record_];
    const [dataObjectA] = faker.dataObjects(1, { was_generated_by: dataGeneration.id }) as [Record_];
    const [executionA] = faker.metagenomeAnnotations(1, [dataGeneration.id], [dataObjectA.id]) as [Record_];
    const [dataObjectB] = faker.dataObjects(1, { was_generated_by: dataGeneration.id }) as [Record_];
    const [executionB] = faker.metagenomeAnnotations(1, [dataGeneration.id], [dataObjectB.id]) as [Record_];
    await server.add('study_set', [study]);
    await server.add('biosample_set', [biosample]);
    await server.add('data_generation_set', [dataGeneration]);
    await server.add('data_object_set', [dataObjectA, dataObjectB]);
    await server.add('workflow_execution_set', [executionA, executionB]);

    const res = await relatedResources(executionA.id);
    expect(res.status).toBe(200);
    const body = res.json;
    expect(body.workflow_execution_id).toBe(executionA.id);
    expect(body.workflow_execution).toEqual(executionA);
    expect(body.data_objects).toHaveLength(2);
    expect(ids(body.data_objects)).toEqual(new Set([dataObjectA.id, dataObjectB.id]));
    expect(body.related_workflow_executions).toHaveLength(1);
    expect(body.related_workflow_executions[0].id).toBe(executionB.id);
    expect(body.biosamples).toHaveLength(1);
    expect(body.biosamples[0].id).toBe(biosample.id);
    expect(body.studies).toHaveLength(1);
    expect(body.studies[0].id).toBe(study.id);
  });

  it('test_endpoints.py::test_find_related_resources_when_wfe_is_informed_by_multiple_data_generations', async () => {
    const [study] = faker.studies(1) as [Record_];
    const [biosampleA, biosampleB] = faker.biosamples(2, [study.id]) as [Record_, Record_];
    const [dataObjectA, dataObjectB] = faker.dataObjects(2) as [Record_, Record_];
    const [generationA] = faker.nucleotideSequencings(1, [study.id], [biosampleA.id], {
      has_output: [dataObjectA.id],
    }) as [Record_];
    const [generationB] = faker.nucleotideSequencings(1, [study.id], [biosampleB.id], {
      has_output: [dataObjectB.id],
    }) as [Record_];
    // Informed by B twice, as the original's test writes it.
    const [execution] = faker.metagenomeAnnotations(
      1,
      [generationA.id, generationB.id, generationB.id],
      [dataObjectA.id, dataObjectB.id],
    ) as [Record_];
    await server.add('study_set', [study]);
    await server.add('biosample_set', [biosampleA, biosampleB]);
    await server.add('data_object_set', [dataObjectA, dataObjectB]);
    await server.add('data_generation_set', [generationA, generationB]);
    await server.add('workflow_execution_set', [execution]);

    const res = await server
      .userClient()
      .request('GET', `/workflow_executions/${execution.id}/related_resources`);
    expect(res.status).toBe(200);
    expect(res.json.biosamples).toHaveLength(2);
    expect(ids(res.json.biosamples)).toEqual(new Set([biosampleA.id, biosampleB.id]));
  });
});
