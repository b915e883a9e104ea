/**
 * Jobs, claims and operations through the whole app (request and response validation against
 * openapi.yaml included): site clients of two sites create jobs, claim, patch and release them;
 * users and anonymous callers are refused where a site must act; the default job filter of a site
 * client, expired operations and nmdc_automation's unclaimed-jobs filter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, type TestApp, passwordToken, newSiteClient } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

setBcryptCost(4);

const ADMIN = { username: 'jobs-root', password: 'Vq7-tundra-mosaic-41-pelican' };
const OWNER_A = { username: 'jobs-owner-a', password: 'Kx2-granite-lantern-88-osprey' };
const OWNER_B = { username: 'jobs-owner-b', password: 'Zr9-meadow-compass-17-heron' };
const SITE_A = 'jobs-lab-a';
const SITE_B = 'jobs-lab-b';
const SYSTEM_ID = /^nmdc:sys0[0-9a-hjkmnp-tv-z]{12}$/;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

let t: TestApp;
type Headers = Record<string, string>;
let siteA: Headers;
let siteB: Headers;
let ownerA: Headers;

async function passwordLogin(username: string, password: string): Promise<Headers> {
  return { Authorization: `Bearer ${await passwordToken(t.app, username, password)}` };
}

/** A user who administers a new site with these capabilities, and a token of the site's client. */
async function siteClientOf(
  owner: { username: string; password: string },
  siteId: string,
  capabilityIds: string[],
): Promise<{ client: Headers; owner: Headers }> {
  const admin = await passwordLogin(ADMIN.username, ADMIN.password);
  expect((await request(t.app).post('/users').set(admin).send(owner)).status).toBe(201);
  const ownerAuth = await passwordLogin(owner.username, owner.password);
  const { client } = await newSiteClient(t.app, ownerAuth, siteId, capabilityIds);
  return { client, owner: ownerAuth };
}

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const a = await siteClientOf(OWNER_A, SITE_A, ['assembly', 'annotation']);
  const b = await siteClientOf(OWNER_B, SITE_B, []);
  siteA = a.client;
  siteB = b.client;
  ownerA = a.owner;
});
afterAll(async () => t?.close());

let tagCount = 0;
/** A config tag no other test uses, so each test can filter for its own jobs. */
const freshTag = () => `tag-${++tagCount}-${Math.random().toString(36).slice(2, 8)}`;

async function createJob(
  auth: Headers,
  body: Record<string, unknown> = {},
): Promise<Doc & { claims: Array<Record<string, unknown>> }> {
  const res = await request(t.app)
    .post('/jobs')
    .set(auth)
    .send({ workflow: { id: 'Metagenome Assembly: v1.0.9' }, config: { tag: freshTag() }, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const claim = (auth: Headers, jobId: string) => request(t.app).post(`/jobs/${jobId}:claim`).set(auth);
const release = (auth: Headers, jobId: string) => request(t.app).post(`/jobs/${jobId}:release`).set(auth);
const patchOp = (auth: Headers, opId: string, body: object) =>
  request(t.app).patch(`/operations/${opId}`).set(auth).send(body);
const getJob = async (jobId: string) => {
  const res = await request(t.app).get(`/jobs/${jobId}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};

/** Every job matching `filter` (one page), as `auth` sees it. */
async function listJobs(auth: Headers, query: Record<string, string>): Promise<Doc[]> {
  const res = await request(t.app)
    .get('/jobs')
    .set(auth)
    .query({ max_page_size: '0', ...query });
  expect(res.status, res.text).toBe(200);
  expect(res.body.next_page_token).toBeUndefined();
  return res.body.resources;
}

describe('the claim flow', () => {
  it('creates a job, claims it, reports on the operation, completes it and claims again', async () => {
    const created = await request(t.app)
      .post('/jobs')
      .set(siteA)
      .send({
        workflow: { id: 'Metagenome Assembly: v1.0.9', capability_ids: ['assembly'], unknown_member: 1 },
        config: { git_repo: 'https://github.com/microbiomedata/metaAssembly', inputs: { x: [1, 2] } },
        name: 'assembly of omprc-1',
        description: 'first run',
        extra_top_level: 'dropped',
      });
    expect(created.status, created.text).toBe(201);
    const job = created.body;
    expect(job).toEqual({
      id: expect.stringMatching(SYSTEM_ID),
      workflow: { id: 'Metagenome Assembly: v1.0.9', capability_ids: ['assembly'] },
      config: { git_repo: 'https://github.com/microbiomedata/metaAssembly', inputs: { x: [1, 2] } },
      claims: [],
      created_at: expect.stringMatching(ISO_TIME),
      name: 'assembly of omprc-1',
      description: 'first run',
    });
    expect(await getJob(job.id)).toEqual(job);

    const before = Date.now();
    const claimed = await claim(siteA, job.id);
    expect(claimed.status, claimed.text).toBe(200);
    const op = claimed.body;
    expect(op).toEqual({
      id: expect.stringMatching(SYSTEM_ID),
      done: false,
      expire_time: expect.stringMatching(ISO_TIME),
      metadata: {
        job: { id: job.id, workflow: job.workflow, config: job.config },
        site_id: SITE_A,
        model: 'nmdc_runtime.api.models.job.JobOperationMetadata',
      },
    });
    const thirtyDays = 30 * 24 * 3600 * 1000;
    expect(Date.parse(op.expire_time) - before).toBeGreaterThanOrEqual(thirtyDays - 1000);
    expect(Date.parse(op.expire_time) - Date.now()).toBeLessThanOrEqual(thirtyDays);
    expect((await getJob(job.id)).claims).toEqual([{ op_id: op.id, site_id: SITE_A }]);
    expect((await request(t.app).get(`/operations/${op.id}`)).body).toEqual(op);

    // While the claim is held, another claim by the same site is refused, naming the operation.
    const again = await claim(siteA, job.id);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      detail: `client site already claimed job ${job.id} -- see operation ${op.id}`,
      id: op.id,
    });

    // Progress: metadata replaced except the read-only members, which keep their stored values.
    const progress = await patchOp(siteA, op.id, {
      metadata: { extra: { phase: 'running' }, site_id: SITE_B, job: { id: 'forged' }, model: 'x.y' },
      ignored_member: true,
    });
    expect(progress.status, progress.text).toBe(200);
    expect(progress.body).toEqual({ ...op, metadata: { ...op.metadata, extra: { phase: 'running' } } });
    // A patch without metadata keeps it; result is set as given.
    const withResult = await patchOp(siteA, op.id, {
      result: { model: 'nmdc_runtime.api.models.operation.EmptyResult' },
    });
    expect(withResult.body).toEqual({
      ...progress.body,
      result: { model: 'nmdc_runtime.api.models.operation.EmptyResult' },
    });
    expect((await getJob(job.id)).claims).toEqual([{ op_id: op.id, site_id: SITE_A }]);

    const done = await patchOp(siteA, op.id, { done: true });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toEqual({ ...withResult.body, done: true });
    expect((await getJob(job.id)).claims).toEqual([{ op_id: op.id, site_id: SITE_A, done: true }]);

    // Done: the claim no longer holds the job, so the site may claim it again.
    const second = await claim(siteA, job.id);
    expect(second.status, second.text).toBe(200);
    expect(second.body.id).not.toBe(op.id);
    expect((await getJob(job.id)).claims).toEqual([
      { op_id: op.id, site_id: SITE_A, done: true },
      { op_id: second.body.id, site_id: SITE_A },
    ]);
  });

  it('lets two sites hold claims of the same job at once', async () => {
    const job = await createJob(siteA);
    const a = await claim(siteA, job.id);
    const b = await claim(siteB, job.id);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body.metadata.site_id).toBe(SITE_B);
    expect((await getJob(job.id)).claims).toEqual([
      { op_id: a.body.id, site_id: SITE_A },
      { op_id: b.body.id, site_id: SITE_B },
    ]);
  });

  it("release cancels the site's unfinished operations and claims, leaves the others, and the site may claim again", async () => {
    const job = await createJob(siteA);
    const first = (await claim(siteA, job.id)).body;
    expect((await patchOp(siteA, first.id, { done: true })).status).toBe(200);
    const second = (await claim(siteA, job.id)).body;
    const other = (await claim(siteB, job.id)).body;

    const released = await release(siteA, job.id);
    expect(released.status, released.text).toBe(200);
    expect(released.body).toEqual({
      ...job,
      claims: [
        { op_id: first.id, site_id: SITE_A, done: true },
        { op_id: second.id, site_id: SITE_A, done: true, cancelled: true },
        { op_id: other.id, site_id: SITE_B },
      ],
    });
    expect(await getJob(job.id)).toEqual(released.body);
    const cancelled = await request(t.app).get(`/operations/${second.id}`);
    expect(cancelled.body).toEqual({
      ...second,
      done: true,
      metadata: { ...second.metadata, cancelled: true },
    });
    // The finished operation and the other site's operation are untouched.
    expect((await request(t.app).get(`/operations/${first.id}`)).body).toEqual({ ...first, done: true });
    expect((await request(t.app).get(`/operations/${other.id}`)).body).toEqual(other);

    const third = await claim(siteA, job.id);
    expect(third.status, third.text).toBe(200);
    expect((await getJob(job.id)).claims).toHaveLength(4);
    // Releasing a job the site holds no claim of changes nothing.
    const job2 = await createJob(siteA);
    const none = await release(siteB, job2.id);
    expect(none.status).toBe(200);
    expect(none.body).toEqual(job2);
  });

  it('answers a job id sent with its colon percent-encoded, as bin/release_jobs.sh sends it', async () => {
    const job = await createJob(siteA);
    const op = (await claim(siteA, job.id.replace(':', '%3A'))).body;
    expect(op.metadata.job.id).toBe(job.id);
    const released = await release(siteA, job.id.replace(':', '%3A'));
    expect(released.status, released.text).toBe(200);
    expect(released.body.claims).toEqual([{ op_id: op.id, site_id: SITE_A, done: true, cancelled: true }]);
  });
});

describe('refusals', () => {
  it('401 without a token where a site must act', async () => {
    const job = await createJob(siteA);
    const opId = (await claim(siteA, job.id)).body.id;
    for (const res of [
      await request(t.app)
        .post('/jobs')
        .send({ workflow: { id: 'w' }, config: {} }),
      await request(t.app).post(`/jobs/${job.id}:claim`),
      await request(t.app).post(`/jobs/${job.id}:release`),
      await request(t.app).patch(`/operations/${opId}`).send({ done: true }),
    ]) {
      expect(res.status, res.text).toBe(401);
      expect(res.body.detail).toEqual(expect.any(String));
    }
    expect((await request(t.app).get(`/operations/${opId}`)).body.done).toBe(false);
  });

  it('403 for a user: jobs are created and claimed by site clients', async () => {
    const job = await createJob(siteA);
    const create = await request(t.app)
      .post('/jobs')
      .set(ownerA)
      .send({ workflow: { id: 'w' }, config: {} });
    expect(create.status).toBe(403);
    expect(create.body.detail).toMatch(/site client/);
    const claimed = await claim(ownerA, job.id);
    expect(claimed.status).toBe(403);
    expect((await getJob(job.id)).claims).toEqual([]);
  });

  it("403 when the site lacks a capability of the job's workflow, or of the catalog workflow of that id", async () => {
    const job = await createJob(siteA, {
      workflow: { id: 'wf-needs-assembly', capability_ids: ['assembly'] },
    });
    const refused = await claim(siteB, job.id);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail: 'client site does not have capability assembly required to claim job',
    });
    expect((await claim(siteA, job.id)).status).toBe(200);

    await t.store.upsertMany('workflows', [
      { id: 'wf-catalogued', name: 'catalogued', capability_ids: ['annotation', 'gpu'] },
    ]);
    const catalogued = await createJob(siteA, { workflow: { id: 'wf-catalogued' } });
    const lacksGpu = await claim(siteA, catalogued.id);
    expect(lacksGpu.status).toBe(403);
    expect(lacksGpu.body).toEqual({
      detail: 'client site does not have capability gpu required to claim job',
    });
    expect((await getJob(catalogued.id)).claims).toEqual([]);
    expect(await t.store.find('operations', { 'metadata.job.id': catalogued.id })).toEqual([]);
  });

  it('404 naming the id for unknown jobs and operations', async () => {
    const missing = 'nmdc:sys0zzzzzzzzzzzz';
    for (const res of [
      await request(t.app).get(`/jobs/${missing}`),
      await claim(siteA, missing),
      await release(siteA, missing),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Job ${missing} not found` });
    }
    for (const res of [
      await request(t.app).get(`/operations/${missing}`),
      await patchOp(siteA, missing, { done: true }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `Operation ${missing} not found` });
    }
  });

  it('403 when another site patches the operation', async () => {
    const job = await createJob(siteA);
    const op = (await claim(siteA, job.id)).body;
    const res = await patchOp(siteB, op.id, { done: true, metadata: { extra: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: `client authorized for different site_id than ${SITE_A}` });
    expect((await request(t.app).get(`/operations/${op.id}`)).body).toEqual(op);
  });

  it("refuses a new job that claims to be claimed (another site's claim included) and stores nothing; [] is fine", async () => {
    const tag = freshTag();
    const forged = await request(t.app)
      .post('/jobs')
      .set(siteA)
      .send({
        workflow: { id: 'Metagenome Assembly: v1.0.9' },
        config: { tag },
        claims: [{ op_id: 'nmdc:sys0forgedop', site_id: SITE_B }],
      });
    expect(forged.status, forged.text).toBe(422);
    expect(forged.body).toEqual({
      detail:
        'Invalid job: `claims` must be empty or left out when creating a job; a site claims a job with POST /jobs/{job_id}:claim',
    });
    expect(await listJobs(siteA, { filter: JSON.stringify({ 'config.tag': tag }) })).toEqual([]);
    const empty = await createJob(siteA, { claims: [] });
    expect(empty.claims).toEqual([]);
    // Site B sees the job as unclaimed by it, and claims it itself.
    const claimed = await claim(siteB, empty.id as string);
    expect(claimed.status, claimed.text).toBe(200);
    expect((await getJob(empty.id as string)).claims).toEqual([{ op_id: claimed.body.id, site_id: SITE_B }]);
  });

  it("reads null members as absent, as a pydantic model's dump sends them", async () => {
    const created = await request(t.app)
      .post('/jobs')
      .set(siteA)
      .send({
        workflow: { id: 'w-nulls', name: null, description: null, capability_ids: null, created_at: null },
        config: {},
        name: 'Job with nulls',
        description: null,
      });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      workflow: { id: 'w-nulls' },
      name: 'Job with nulls',
    });
    expect(created.body.workflow).toEqual({ id: 'w-nulls' });
    expect(created.body).not.toHaveProperty('description');
  });

  it('422 naming the problem for a bad job or patch body', async () => {
    const noConfig = await request(t.app)
      .post('/jobs')
      .set(siteA)
      .send({ workflow: { id: 'w' } });
    expect(noConfig.status).toBe(422);
    expect(noConfig.body.detail).toMatch(/config/);
    const noWorkflowId = await request(t.app).post('/jobs').set(siteA).send({ workflow: {}, config: {} });
    expect(noWorkflowId.status).toBe(422);
    expect(noWorkflowId.body.detail).toMatch(/workflow.*id|id.*workflow/);
    const badClaims = await request(t.app)
      .post('/jobs')
      .set(siteA)
      .send({ workflow: { id: 'w' }, config: {}, claims: [{ op_id: 1 }] });
    expect(badClaims.status).toBe(422);
    expect(badClaims.body.detail).toMatch(/claims/);

    const job = await createJob(siteA);
    const op = (await claim(siteA, job.id)).body;
    const badDone = await patchOp(siteA, op.id, { done: 'yes' });
    expect(badDone.status).toBe(422);
    expect(badDone.body.detail).toMatch(/done/);
  });
});

describe('expiry', () => {
  it('an operation past its expire_time cannot be patched (409 naming the time) and its claim is not held', async () => {
    const job = await createJob(siteA);
    const opId = 'nmdc:sys0expired00001';
    const expireTime = new Date(Date.now() - 60_000).toISOString();
    await t.store.upsertAtomically([
      {
        collection: 'operations',
        docs: [
          {
            id: opId,
            done: false,
            expire_time: expireTime,
            metadata: {
              job: { id: job.id, workflow: job.workflow, config: job.config },
              site_id: SITE_A,
              model: 'nmdc_runtime.api.models.job.JobOperationMetadata',
            },
          },
        ],
      },
      { collection: 'jobs', docs: [{ ...job, claims: [{ op_id: opId, site_id: SITE_A }] }] },
    ]);
    const patched = await patchOp(siteA, opId, { done: true });
    expect(patched.status).toBe(409);
    expect(patched.body).toEqual({
      detail: `Operation ${opId} expired at ${expireTime} and can no longer be updated`,
    });
    expect((await request(t.app).get(`/operations/${opId}`)).body.done).toBe(false);

    const reclaimed = await claim(siteA, job.id);
    expect(reclaimed.status, reclaimed.text).toBe(200);
    expect((await getJob(job.id)).claims).toEqual([
      { op_id: opId, site_id: SITE_A },
      { op_id: reclaimed.body.id, site_id: SITE_A },
    ]);
  });
});

describe('listing', () => {
  it('a site client without a filter sees the jobs its site has not claimed; filter={} shows all', async () => {
    const tag = freshTag();
    const claimedByA = await createJob(siteA, { config: { tag } });
    const unclaimed = await createJob(siteA, { config: { tag } });
    expect((await claim(siteA, claimedByA.id)).status).toBe(200);
    const ids = (docs: Doc[]) => docs.map((d) => d.id);

    const asA = ids(await listJobs(siteA, {}));
    expect(asA).toContain(unclaimed.id);
    expect(asA).not.toContain(claimedByA.id);
    expect(ids(await listJobs(siteA, { filter: '{}' }))).toEqual(
      expect.arrayContaining([claimedByA.id, unclaimed.id]),
    );
    expect(ids(await listJobs(siteB, {}))).toEqual(expect.arrayContaining([claimedByA.id, unclaimed.id]));
    // Anonymous and user callers get no default filter; an invalid token is ignored on a public read.
    expect(ids(await listJobs({}, {}))).toEqual(expect.arrayContaining([claimedByA.id, unclaimed.id]));
    expect(ids(await listJobs(ownerA, {}))).toEqual(expect.arrayContaining([claimedByA.id, unclaimed.id]));
    expect(ids(await listJobs({ Authorization: 'Bearer stale' }, {}))).toEqual(
      expect.arrayContaining([claimedByA.id, unclaimed.id]),
    );
    // Each record as stored.
    const mine = await listJobs(siteB, { filter: JSON.stringify({ 'config.tag': tag }) });
    expect(mine).toEqual(
      [await getJob(claimedByA.id), await getJob(unclaimed.id)].sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
  });

  it('pages with tokens in id order and projects', async () => {
    const tag = freshTag();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await createJob(siteA, { config: { tag, i } }));
    const expected = made.map((j) => j.id).sort();
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const res = await request(t.app)
        .get('/jobs')
        .query({
          filter: JSON.stringify({ 'config.tag': tag }),
          max_page_size: '2',
          projection: 'config',
          ...(token ? { page_token: token } : {}),
        });
      expect(res.status, res.text).toBe(200);
      for (const r of res.body.resources) expect(Object.keys(r).sort()).toEqual(['config', 'id']);
      seen.push(...res.body.resources.map((r: Doc) => r.id));
      token = res.body.next_page_token;
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual(expected);
  });

  it('lists operations with a filter', async () => {
    const job = await createJob(siteA);
    const a = (await claim(siteA, job.id)).body;
    const b = (await claim(siteB, job.id)).body;
    const res = await request(t.app)
      .get('/operations')
      .query({ filter: JSON.stringify({ 'metadata.job.id': job.id, 'metadata.site_id': SITE_B }) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ resources: [b] });
    const both = await request(t.app)
      .get('/operations')
      .query({ filter: JSON.stringify({ 'metadata.job.id': job.id }) });
    expect(both.body.resources).toEqual([a, b].sort((x, y) => (x.id < y.id ? -1 : 1)));
  });

  it('refuses a filter that is not JSON with a detail', async () => {
    for (const path of ['/jobs', '/operations']) {
      const res = await request(t.app).get(path).query({ filter: '{"claims": ' });
      expect([400, 422]).toContain(res.status);
      expect(res.body.detail).toMatch(/JSON/);
    }
  });

  it("answers nmdc_automation's unclaimed-jobs filter: no claims, or every claim cancelled", async () => {
    const workflow = `wf-unclaimed-${freshTag()}`;
    const never = await createJob(siteA, { workflow: { id: workflow } });
    const held = await createJob(siteA, { workflow: { id: workflow } });
    await claim(siteA, held.id);
    const releasedJob = await createJob(siteA, { workflow: { id: workflow } });
    await claim(siteA, releasedJob.id);
    await release(siteA, releasedJob.id);
    const mixed = await createJob(siteA, { workflow: { id: workflow } });
    await claim(siteA, mixed.id);
    await release(siteA, mixed.id);
    await claim(siteB, mixed.id);
    await createJob(siteA, { workflow: { id: `${workflow}-other` } });

    const filter = {
      $and: [
        { 'workflow.id': { $in: [workflow] } },
        {
          $or: [{ claims: { $size: 0 } }, { claims: { $not: { $elemMatch: { cancelled: { $ne: true } } } } }],
        },
      ],
    };
    const found = await listJobs(siteA, { filter: JSON.stringify(filter) });
    expect(found.map((j) => j.id).sort()).toEqual([never.id, releasedJob.id].sort());
  });
});
