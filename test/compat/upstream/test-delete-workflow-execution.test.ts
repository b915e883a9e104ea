/**
 * Port of the original's tests/test_api/test_delete_workflow_execution.py (v2.13.0):
 * `DELETE /workflows/workflow_executions/{id}` as testuser, with and without the delete allowance.
 */
import { describe, expect, it } from 'vitest';
import { JOBS } from '../../../src/workflows/jobs.ts';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker, type Record_ } from './support/faker.ts';

let server: UpstreamServer;
const faker = new Faker();
const DELETE = '/queries:run(query_cmd:DeleteCommand)';

withUpstreamServer((started) => (server = started));

const idsOf = (records: Array<{ id: string }>) => records.map((r) => r.id);

/** A study, a biosample of it and a sequencing run of the biosample, stored. */
async function foundation(): Promise<Record_> {
  const [study] = faker.studies(1) as [Record_];
  const [biosample] = faker.biosamples(1, [study.id]) as [Record_];
  const [dataGeneration] = faker.nucleotideSequencings(1, [study.id], [biosample.id]) as [Record_];
  await server.add('study_set', [study]);
  await server.add('biosample_set', [biosample]);
  await server.add('data_generation_set', [dataGeneration]);
  return dataGeneration;
}

/** The simple cases' records: an assembly taking one data object and producing another, stored. */
async function oneAssembly(): Promise<{ input: Record_; output: Record_; execution: Record_ }> {
  const dataGeneration = await foundation();
  const [input] = faker.dataObjects(1, { name: 'input_data' }) as [Record_];
  const [output] = faker.dataObjects(1, { name: 'output_data' }) as [Record_];
  const [execution] = faker.workflowExecutions(
    1,
    'nmdc:MetagenomeAssembly',
    [dataGeneration.id],
    [input.id],
    {
      has_output: [output.id],
    },
  ) as [Record_];
  await server.add('data_object_set', [input, output]);
  await server.add('workflow_execution_set', [execution]);
  return { input, output, execution };
}

describe('tests/test_api/test_delete_workflow_execution.py', () => {
  it('test_delete_workflow_execution.py::test_delete_workflow_execution_cascade_deletion', async () => {
    await server.allow(TEST_USER.username, DELETE);
    const dataGeneration = await foundation();
    const inputs = faker.dataObjects(2, { name: 'input_data' });
    const primaryOutputs = faker.dataObjects(3, { name: 'primary_output_data' });
    const dependent1Outputs = faker.dataObjects(2, { name: 'dependent1_output_data' });
    const dependent2Outputs = faker.dataObjects(2, { name: 'dependent2_output_data' });
    const externalInputs = faker.dataObjects(1, { name: 'external_input_data' });
    // The execution to delete: an annotation, so its aggregated annotations go with it.
    const [primary] = faker.workflowExecutions(
      1,
      'nmdc:MetagenomeAnnotation',
      [dataGeneration.id],
      idsOf(inputs),
      {
        has_output: idsOf(primaryOutputs),
      },
    ) as [Record_];
    const [dependent1] = faker.workflowExecutions(
      1,
      'nmdc:MetagenomeAssembly',
      [dataGeneration.id],
      [primaryOutputs[0]!.id, primaryOutputs[1]!.id, externalInputs[0]!.id],
      { has_output: idsOf(dependent1Outputs) },
    ) as [Record_];
    const [dependent2] = faker.workflowExecutions(
      1,
      'nmdc:ReadQcAnalysis',
      [dataGeneration.id],
      [primaryOutputs[2]!.id, externalInputs[0]!.id],
      { has_output: idsOf(dependent2Outputs) },
    ) as [Record_];
    const annotations = [
      {
        gene_function_id: 'PFAM:PF12705',
        count: 4,
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: primary.id,
      },
      {
        gene_function_id: 'PFAM:PF00001',
        count: 2,
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: primary.id,
      },
    ];
    const job = (id: string, workflow: string, activity: string) => ({
      id,
      workflow: { id: workflow },
      config: { activity_id: activity },
      claims: [],
    });
    const jobs = [
      job('nmdc:job-primary-test-1', 'Metagenome Assembly: v1.0.3', primary.id),
      job('nmdc:job-primary-test-2', 'Metagenome Assembly: v1.0.3', primary.id),
      job('nmdc:job-dependent1-test', 'Metagenome Annotation: v1.0.4', dependent1.id),
      job('nmdc:job-dependent2-test', 'Metagenome Annotation: v1.0.5', dependent2.id),
      job('nmdc:job-unrelated-test', 'Metagenome Annotation: v1.1.5', 'nmdc:wfrbt-11-unrelated.1'),
    ];
    const allDataObjects = [
      ...inputs,
      ...primaryOutputs,
      ...dependent1Outputs,
      ...dependent2Outputs,
      ...externalInputs,
    ];
    await server.add('data_object_set', allDataObjects);
    await server.add('workflow_execution_set', [primary, dependent1, dependent2]);
    await server.add('functional_annotation_agg', annotations);
    await server.add(JOBS, jobs);

    expect(await server.count('workflow_execution_set')).toBeGreaterThanOrEqual(3);
    expect(await server.count('data_object_set')).toBeGreaterThanOrEqual(8);
    expect(await server.count('functional_annotation_agg', { was_generated_by: primary.id })).toBe(2);
    expect(await server.count(JOBS)).toBeGreaterThanOrEqual(5);
    expect(await server.count(JOBS, { 'config.activity_id': primary.id })).toBe(2);

    const response = await server
      .userClient()
      .request('DELETE', `/workflows/workflow_executions/${primary.id}`);
    expect(response.status).toBe(200);
    const data = response.json;
    for (const key of [
      'message',
      'deleted_workflow_execution_ids',
      'deleted_data_object_ids',
      'deleted_functional_annotation_agg_oids',
      'deleted_job_ids',
    ])
      expect(data).toHaveProperty(key);

    const deletedExecutions = new Set<string>(data.deleted_workflow_execution_ids);
    expect(deletedExecutions).toEqual(new Set([primary.id, dependent1.id, dependent2.id]));
    const deletedDataObjects = new Set<string>(data.deleted_data_object_ids);
    expect(deletedDataObjects).toEqual(
      new Set(idsOf([...primaryOutputs, ...dependent1Outputs, ...dependent2Outputs])),
    );
    const deletedJobs = new Set<string>(data.deleted_job_ids);
    expect(deletedJobs).toEqual(
      new Set([
        'nmdc:job-primary-test-1',
        'nmdc:job-primary-test-2',
        'nmdc:job-dependent1-test',
        'nmdc:job-dependent2-test',
      ]),
    );
    // The keys of the two aggregated annotations (the original: their ObjectIds).
    expect(Array.isArray(data.deleted_functional_annotation_agg_oids)).toBe(true);
    expect(data.deleted_functional_annotation_agg_oids).toHaveLength(2);

    for (const id of deletedExecutions) expect(await server.count('workflow_execution_set', { id })).toBe(0);
    for (const id of deletedDataObjects) expect(await server.count('data_object_set', { id })).toBe(0);
    for (const id of idsOf([...inputs, ...externalInputs]))
      expect(await server.count('data_object_set', { id })).toBe(1);
    for (const id of deletedJobs) expect(await server.count(JOBS, { id })).toBe(0);
    expect(await server.count(JOBS, { id: 'nmdc:job-unrelated-test' })).toBe(1);
    expect(await server.count('functional_annotation_agg', { was_generated_by: primary.id })).toBe(0);
  });

  it('test_delete_workflow_execution.py::test_delete_workflow_execution_not_found', async () => {
    await server.allow(TEST_USER.username, DELETE);
    const id = 'nmdc:wfmgan-00-nonexistent.1';
    expect(await server.count('workflow_execution_set', { id })).toBe(0);
    const response = await server.userClient().failing('DELETE', `/workflows/workflow_executions/${id}`);
    expect(response.status).toBe(404);
    expect(response.json.detail.toLowerCase()).toContain('not found');
  });

  it('test_delete_workflow_execution.py::test_delete_workflow_execution_simple_case', async () => {
    await server.allow(TEST_USER.username, DELETE);
    const { input, output, execution } = await oneAssembly();
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(1);
    expect(await server.count('data_object_set', { id: input.id })).toBe(1);
    expect(await server.count('data_object_set', { id: output.id })).toBe(1);

    const response = await server
      .userClient()
      .request('DELETE', `/workflows/workflow_executions/${execution.id}`);
    expect(response.status).toBe(200);
    expect(response.json.deleted_workflow_execution_ids).toEqual([execution.id]);
    expect(response.json.deleted_data_object_ids).toEqual([output.id]);
    expect(response.json.deleted_functional_annotation_agg_oids).toEqual([]);
    expect(response.json.deleted_job_ids).toEqual([]);
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(0);
    expect(await server.count('data_object_set', { id: output.id })).toBe(0);
    expect(await server.count('data_object_set', { id: input.id })).toBe(1);
  });

  it('test_delete_workflow_execution.py::test_delete_workflow_execution_unauthorized_user', async () => {
    expect((await server.allowances.list({ username: TEST_USER.username, action: DELETE })).length).toBe(0);
    const { input, output, execution } = await oneAssembly();

    const response = await server
      .userClient()
      .failing('DELETE', `/workflows/workflow_executions/${execution.id}`);
    expect(response.status).toBe(403);
    expect(response.json.detail).toBe('Only specific users are allowed to issue update and delete commands.');
    expect(await server.count('workflow_execution_set', { id: execution.id })).toBe(1);
    expect(await server.count('data_object_set', { id: input.id })).toBe(1);
    expect(await server.count('data_object_set', { id: output.id })).toBe(1);
  });
});
