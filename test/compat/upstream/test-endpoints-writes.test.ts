/**
 * Port of the original's tests/test_api/test_endpoints.py (v2.13.0), part 5 of 5: writing with
 * `POST /queries:run` (update and delete): malformed statements, schema validation of updates,
 * and references a write would leave broken (refused unless `allow_broken_refs=true`).
 */
import { describe, expect, it } from 'vitest';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { Faker, type Record_ } from './support/faker.ts';

let server: UpstreamServer;
const faker = new Faker();
withUpstreamServer((started) => (server = started));

const DELETE = '/queries:run(query_cmd:DeleteCommand)';

/** The fixture `fake_studies_and_biosamples_in_mdb`: study B part of study A, a biosample of each. */
async function fakeStudiesAndBiosamples(): Promise<[Record_, Record_, Record_, Record_]> {
  const [studyA] = faker.studies(1) as [Record_];
  const [studyB] = faker.studies(1, { part_of: [studyA.id] }) as [Record_];
  const [biosampleA] = faker.biosamples(1, [studyA.id]) as [Record_];
  const [biosampleB] = faker.biosamples(1, [studyB.id]) as [Record_];
  await server.add('study_set', [studyA, studyB]);
  await server.add('biosample_set', [biosampleA, biosampleB]);
  return [studyA, studyB, biosampleA, biosampleB];
}

const deleteStudy = (id: string | { $in: string[] }, collection = 'study_set') => ({
  delete: collection,
  deletes: [{ q: { id }, limit: 0 }],
});

const linkToMissingStudy = (studyId: string) => ({
  update: 'study_set',
  updates: [{ q: { id: studyId }, u: { $set: { part_of: ['nmdc:sty-00-000099'] } } }],
});

describe('tests/test_api/test_endpoints.py: writes through queries:run', () => {
  it('test_endpoints.py::test_queries_run_invalid_update', async () => {
    await server.allow(TEST_USER.username, DELETE);
    const [study] = faker.studies(1);
    expect(await server.count('study_set', { id: study!.id })).toBe(0);
    await server.add('study_set', [study!]);
    const client = server.userClient();

    // A modifier whose operand is not an object, as MongoDB refuses it. The original answers
    // MongoDB's own write error ({index, code 9, errmsg}); here the detail names the statement
    // and the rule in this service's words.
    const invalidUpdate = await client.failing('POST', '/queries:run', {
      update: 'study_set',
      updates: [{ q: { id: 'nmdc:sty-11-hhkbcg72' }, u: { $unset: 'notes' } }],
    });
    expect(invalidUpdate.status).toBe(422);
    expect(invalidUpdate.json.detail).toMatch(/^updates\[0\]\.u\.\$unset must be an object/);

    // A delete statement without `q` (and `limit`): 422, never an empty filter. The original
    // answers pydantic's list of every command shape the body misses; here the statement's.
    const invalidDelete = await client.failing('POST', '/queries:run', {
      delete: 'study_set',
      deletes: [{ id: 'nmdc:sty-11-hhkbcg72' }],
    });
    expect(invalidDelete.status).toBe(422);
    expect(invalidDelete.json.detail).toMatch(/^deletes\[0\]\.q is missing/);
    expect(await server.count('study_set', { id: study!.id })).toBe(1);
  });

  it('test_endpoints.py::test_run_query_update_as_user', async () => {
    await server.allow(TEST_USER.username, DELETE);
    // The original's test database holds this biosample; here it is stored first.
    const [biosample] = faker.biosamples(1, ['nmdc:sty-00-000001'], {
      id: 'nmdc:bsm-13-amrnys72',
      name: 'amrnys72',
    });
    await server.add('study_set', faker.studies(1, { id: 'nmdc:sty-00-000001' }));
    await server.add('biosample_set', [biosample!]);
    const response = await server.userClient().failing('POST', '/queries:run', {
      update: 'biosample_set',
      updates: [{ q: { id: 'nmdc:bsm-13-amrnys72' }, u: { $set: { 'associated_studies.0': 42 } } }],
    });
    expect(response.status).toBe(422);
    expect(JSON.stringify(response.json.detail)).toMatch(/associated_studies/);
    expect((await server.get('biosample_set', 'nmdc:bsm-13-amrnys72'))!.associated_studies).toEqual([
      'nmdc:sty-00-000001',
    ]);
  });

  it('test_endpoints.py::test_queries_run_rejects_deletions_that_would_leave_broken_references', async () => {
    const [studyA, studyB, biosampleA, biosampleB] = await fakeStudiesAndBiosamples();
    await server.allow(TEST_USER.username, DELETE);
    const client = server.userClient();

    // Study A is referenced by biosample A and study B; study B by biosample B.
    for (const study of [studyA, studyB]) {
      const refused = await client.failing('POST', '/queries:run', deleteStudy(study.id));
      expect(refused.status, study.id).toBe(422);
      expect(refused.json.detail).toMatch(
        /^The operation was not performed, because performing it would have left behind/,
      );
      expect(refused.json.detail).toContain(`'id'='${study.id}'`);
    }
    // Nothing references the biosamples.
    const biosamples = await client.request(
      'POST',
      '/queries:run',
      deleteStudy({ $in: [biosampleA.id, biosampleB.id] }, 'biosample_set'),
    );
    expect(biosamples.status).toBe(200);
    expect(biosamples.json.n).toBe(2);
    // Both studies together leave no reference behind, though B references A.
    const studies = await client.request(
      'POST',
      '/queries:run',
      deleteStudy({ $in: [studyA.id, studyB.id] }),
    );
    expect(studies.status).toBe(200);
    expect(studies.json.n).toBe(2);
  });

  it('test_endpoints.py::test_queries_run_allows_ref_breaking_deletions_when_user_opts_to_allow_broken_refs', async () => {
    const [studyA] = await fakeStudiesAndBiosamples();
    await server.allow(TEST_USER.username, DELETE);
    const client = server.userClient();
    const refused = await client.failing('POST', '/queries:run', deleteStudy(studyA.id));
    expect(refused.status).toBe(422);
    const allowed = await client.request(
      'POST',
      '/queries:run?allow_broken_refs=true',
      deleteStudy(studyA.id),
    );
    expect(allowed.status).toBe(200);
    expect(allowed.json.n).toBe(1);
    expect(await server.get('study_set', studyA.id)).toBeNull();
  });

  it('test_endpoints.py::test_queries_run_rejects_updates_that_would_leave_broken_references', async () => {
    const [studyA] = await fakeStudiesAndBiosamples();
    await server.allow(TEST_USER.username, DELETE);
    expect(await server.count('study_set', { id: 'nmdc:sty-00-000099' })).toBe(0);
    const refused = await server.userClient().failing('POST', '/queries:run', linkToMissingStudy(studyA.id));
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json.detail)).toContain('study_set');
    expect((await server.get('study_set', studyA.id))!.part_of).toBeUndefined();
  });

  it('test_endpoints.py::test_queries_run_allows_ref_breaking_updates_when_user_opts_to_allow_broken_refs', async () => {
    const [studyA] = await fakeStudiesAndBiosamples();
    await server.allow(TEST_USER.username, DELETE);
    const client = server.userClient();
    const refused = await client.failing('POST', '/queries:run', linkToMissingStudy(studyA.id));
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json.detail)).toContain('study_set');
    const allowed = await client.request(
      'POST',
      '/queries:run?allow_broken_refs=true',
      linkToMissingStudy(studyA.id),
    );
    expect(allowed.status).toBe(200);
    expect((await server.get('study_set', studyA.id))!.part_of).toEqual(['nmdc:sty-00-000099']);
  });
});
