/**
 * Port of the original's tests/test_ops/test_ops.py (v2.13.0). The original makes the job that
 * `POST /metadata/json:submit` makes (`_ensure_job__metadata_in`) and runs the Dagster graph that
 * applies it (`apply_metadata_in`); here the endpoint does both, so the port submits the records
 * there as a user holding the allowance and counts them in the store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';

let server: UpstreamServer;
withUpstreamServer((started) => (server = started));

const EXECUTION = 'nmdc:wfmtan-13-hemh0a82.1';
const AGGREGATES = [
  {
    was_generated_by: EXECUTION,
    gene_function_id: 'KEGG.ORTHOLOGY:K00005',
    count: 10,
    type: 'nmdc:FunctionalAnnotationAggMember',
  },
  {
    was_generated_by: EXECUTION,
    gene_function_id: 'KEGG.ORTHOLOGY:K01426',
    count: 5,
    type: 'nmdc:FunctionalAnnotationAggMember',
  },
];

const stored = () => server.count('functional_annotation_agg', { $or: AGGREGATES });

// The aggregates have no ids (`cleanup` removes records by id): removed here, as the original
// removes them before it starts.
afterEach(async () => {
  await server.store.deleteMany('functional_annotation_agg', { $or: AGGREGATES });
});

describe('tests/test_ops/test_ops.py', () => {
  it('test_ops.py::test_apply_metadata_in_functional_annotation_agg', async () => {
    expect(await stored()).toBe(0);
    // The original's database holds the annotation run the aggregates name; the endpoint checks
    // references (the original's Dagster job, called without the endpoint, does not), so it is
    // stored first.
    await server.add('workflow_execution_set', [
      {
        id: EXECUTION,
        type: 'nmdc:MetatranscriptomeAnnotation',
        has_input: ['nmdc:dobj-13-00000001'],
        has_output: [],
        was_informed_by: ['nmdc:dgns-13-00000001'],
        started_at_time: '2023-03-24T02:02:59.479107+00:00',
        ended_at_time: '2023-03-24T02:02:59.479129+00:00',
        execution_resource: 'JGI',
        git_url: 'https://www.example.com',
      },
    ]);
    await server.allow(TEST_USER.username, '/metadata/json:submit');

    const response = await server
      .userClient()
      .request('POST', '/metadata/json:submit', { functional_annotation_agg: AGGREGATES });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ type: 'success', detail: { run_id: expect.any(String) } });
    expect(await stored()).toBe(2);
  });
});
