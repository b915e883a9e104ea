/**
 * nmdc_automation (NMDC workflow automation), nmdc_automation/api/nmdcapi.py: the job and operation
 * calls of `NmdcRuntimeApi` (create_job, list_jobs, get_job, claim_job, release_job, list_ops,
 * get_op, update_op), as the scheduler (workflow_automation/sched.py) and the watcher
 * (workflow_automation/watch_nmdc.py) make them, and bin/release_jobs.sh. Each request is the one
 * the client prepares, headers and body included; expected answers come from the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import type { CompatServer } from './support/server.ts';
import { SITE_ID } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps, requestsQuery } from './support/python.ts';
import { requestsRequote } from './support/nmdc-notebooks-clients.ts';
import { authedHeaders, startAutomationServer } from './support/nmdc-automation-client.ts';

let server: CompatServer;
/** The token `NmdcRuntimeApi.get_token` obtains with the site's client credentials. */
let siteToken: string;

beforeAll(async () => {
  ({ server, siteToken } = await startAutomationServer());
});
afterAll(async () => server?.close());

/** `requests.post(url, headers=self.header)` without data: requests sends `Content-Length: 0`. */
const postWithoutBody = (target: string) =>
  send(server.url, { method: 'POST', target, headers: authedHeaders(siteToken), body: '' });

/** `NmdcRuntimeApi.create_job(job_obj)`: `requests.post(url, headers, data=json.dumps(job_obj))`. */
const createJob = (jobObj: unknown) =>
  send(server.url, {
    method: 'POST',
    target: '/jobs',
    headers: authedHeaders(siteToken),
    body: jsonDumps(jobObj),
  });

/** `NmdcRuntimeApi.claim_job`: the answer with the `claimed` flag the client adds (true on 409). */
async function claimJob(jobId: string): Promise<{ res: WireResponse; data: Record<string, unknown> }> {
  const res = await postWithoutBody(`/jobs/${jobId}:claim`);
  return { res, data: { ...res.json, claimed: res.status === 409 } };
}

/** `NmdcRuntimeApi.get_op(opid)`. */
const getOp = (opId: string) =>
  send(server.url, { method: 'GET', target: `/operations/${opId}`, headers: authedHeaders(siteToken) });

/**
 * `NmdcRuntimeApi.list_jobs(filt, max)`: `params={"max_page_size": max, "filter": json.dumps(filt)}`
 * (no filter when `filt` is falsy), `page_token` added to the same dict for later pages.
 */
async function listJobs(filt: unknown, max = 100): Promise<{ targets: string[]; results: Doc[] }> {
  const params: Array<[string, string | number]> = [['max_page_size', max]];
  if (filt) params.push(['filter', jsonDumps(filt)]);
  const targets: string[] = [];
  const results: Doc[] = [];
  for (;;) {
    const target = `/jobs?${requestsQuery(params)}`;
    targets.push(target);
    const res = await send(server.url, { method: 'GET', target, headers: authedHeaders(siteToken) });
    expect(res.status, res.text).toBe(200);
    results.push(...res.json.resources);
    if (!res.json.next_page_token) break;
    const token = params.find(([name]) => name === 'page_token');
    if (token) token[1] = res.json.next_page_token;
    else params.push(['page_token', res.json.next_page_token]);
  }
  return { targets, results };
}

/**
 * `NmdcRuntimeApi.list_ops(filt, max_page_size)`: an f-string URL (`json.dumps(filt)` unencoded,
 * which requests requotes) and `&page_token=<token>` appended to the first URL for later pages.
 */
async function listOps(filt: unknown, maxPageSize = 40): Promise<{ targets: string[]; results: Doc[] }> {
  let url = `/operations?max_page_size=${maxPageSize}`;
  if (filt) url += `&filter=${jsonDumps(filt)}`;
  const origUrl = url;
  const targets: string[] = [];
  const results: Doc[] = [];
  for (;;) {
    const target = requestsRequote(url);
    targets.push(target);
    const res = await send(server.url, { method: 'GET', target, headers: authedHeaders(siteToken) });
    expect(res.status, res.text).toBe(200);
    results.push(...res.json.resources);
    if (!res.json.next_page_token) break;
    url = `${origUrl}&page_token=${res.json.next_page_token}`;
  }
  return { targets, results };
}

/**
 * `NmdcRuntimeApi.update_op(opid, done, results, meta)`: `done` when not None, `result` when truthy,
 * and with `meta` the operation's current metadata (from get_op) with `extra` set to it.
 */
async function updateOp(
  opId: string,
  done?: boolean,
  results?: unknown,
  meta?: unknown,
): Promise<WireResponse> {
  const d: Record<string, unknown> = {};
  if (done !== undefined) d.done = done;
  if (results) d.result = results;
  if (meta) {
    const cur = await getOp(opId);
    expect(cur.status, cur.text).toBe(200);
    d.metadata = { ...cur.json.metadata, extra: meta };
  }
  return send(server.url, {
    method: 'PATCH',
    target: `/operations/${opId}`,
    headers: authedHeaders(siteToken),
    body: jsonDumps(d),
  });
}

const byId = (docs: Doc[]) => [...docs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** A job record as sched.py's `create_job_rec` builds it (the workflow named `<name>: <version>`). */
function jobRec(workflowId: string, wasInformedBy: string, extra: Record<string, unknown> = {}) {
  return {
    workflow: { id: workflowId },
    config: {
      git_repo: 'https://github.com/microbiomedata/metaAssembly',
      release: 'v1.0.9',
      wdl: 'jgi_assembly.wdl',
      activity_id: 'nmdc:wfmgas-11-abc123.1',
      activity_set: 'workflow_execution_set',
      was_informed_by: wasInformedBy,
      trigger_activity: 'nmdc:wfrqc-11-abc123.1',
      iteration: 1,
      input_prefix: 'jgi_metaAssembly',
      inputs: {
        input_files: ['https://data.microbiomedata.org/data/x.fastq.gz'],
        proj: 'nmdc:wfmgas-11-abc123.1',
      },
      input_data_objects: [],
      activity: { name: 'Metagenome Assembly for {id}', type: 'nmdc:MetagenomeAssembly' },
      outputs: [{ output: 'contigs', data_object_type: 'Assembly Contigs', id: 'nmdc:dobj-11-out001' }],
      ...extra,
    },
    claims: [],
  };
}

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.create_job, get_job, list_jobs', () => {
  it('sched.Scheduler.add_job_rec -> create_job(create_job_rec(...)): 201 with the minted id, then get_job answers the stored job', async () => {
    const rec = jobRec('Metagenome Assembly: v1.0.9', 'nmdc:omprc-11-createjob');
    const res = await createJob(rec);
    expect(res.status, res.text).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const stored = (await server.store.getById('jobs', res.json.id))!;
    expect(res.json).toEqual(stored);
    expect(stored).toEqual({
      id: expect.stringMatching(/^nmdc:sys0[0-9a-z]{12}$/),
      workflow: rec.workflow,
      config: rec.config,
      claims: [],
      created_at: expect.any(String),
    });
    // get_job: the id raw in the path, colon and all.
    const got = await send(server.url, {
      method: 'GET',
      target: `/jobs/${stored.id}`,
      headers: authedHeaders(siteToken),
    });
    expect(got.status, got.text).toBe(200);
    expect(got.json).toEqual(stored);
  });

  it('sched.Scheduler.get_existing_jobs -> list_jobs({"config.git_repo": ...}), then get_op of each claim to see whether it is active', async () => {
    const gitRepo = 'https://github.com/microbiomedata/ReadsQC-existing';
    const unclaimed = (
      await createJob(jobRec('Reads QC: v1.0.8', 'nmdc:omprc-11-existing1', { git_repo: gitRepo }))
    ).json;
    const claimed = (
      await createJob(jobRec('Reads QC: v1.0.8', 'nmdc:omprc-11-existing2', { git_repo: gitRepo }))
    ).json;
    const op = (await claimJob(claimed.id)).data;
    const { targets, results } = await listJobs({ 'config.git_repo': gitRepo });
    expect(targets).toEqual([
      `/jobs?max_page_size=100&filter=%7B%22config.git_repo%22%3A+%22https%3A%2F%2Fgithub.com%2Fmicrobiomedata%2FReadsQC-existing%22%7D`,
    ]);
    expect(byId(results)).toEqual(byId(await server.store.find('jobs', { 'config.git_repo': gitRepo })));
    expect(results.map((j) => j.id).sort()).toEqual([unclaimed.id, claimed.id].sort());
    // The scheduler reads each claim's operation; `done: false` means the job is in progress.
    const listedClaimed = results.find((j) => j.id === claimed.id)!;
    const claims = listedClaimed.claims as Array<{ op_id: string }>;
    expect(claims).toEqual([{ op_id: op.id, site_id: SITE_ID }]);
    const opRes = await getOp(claims[0]!.op_id);
    expect(opRes.status).toBe(200);
    expect(opRes.json.done).toBe(false);
  });

  it('list_jobs collects every page: max_page_size, filter, then page_token in the same params dict', async () => {
    const gitRepo = 'https://github.com/microbiomedata/paged-jobs';
    for (let i = 0; i < 5; i++)
      await createJob(jobRec('Paged: v1', `nmdc:omprc-11-paged${i}`, { git_repo: gitRepo }));
    const { targets, results } = await listJobs({ 'config.git_repo': gitRepo }, 2);
    expect(targets).toHaveLength(3);
    expect(targets[1]).toMatch(/^\/jobs\?max_page_size=2&filter=%7B[^&]+&page_token=[^&]+$/);
    expect(results).toEqual(await server.store.find('jobs', { 'config.git_repo': gitRepo }));
  });

  it('list_jobs() without a filter as a site client: the jobs its site has not claimed', async () => {
    const mine = (await createJob(jobRec('Default filter: v1', 'nmdc:omprc-11-default1'))).json;
    const open = (await createJob(jobRec('Default filter: v1', 'nmdc:omprc-11-default2'))).json;
    await claimJob(mine.id);
    const { targets, results } = await listJobs(null);
    expect(targets[0]).toBe('/jobs?max_page_size=100');
    const ids = results.map((j) => j.id);
    expect(ids).toContain(open.id);
    expect(ids).not.toContain(mine.id);
    expect(byId(results)).toEqual(
      byId(await server.store.find('jobs', { 'claims.site_id': { $ne: SITE_ID } })),
    );
  });

  it('watch_nmdc.RuntimeApiHandler.get_unclaimed_jobs -> list_jobs with the $in / $size / $not $elemMatch filter', async () => {
    const workflowId = 'Unclaimed filter: v1.2.3';
    const never = (await createJob(jobRec(workflowId, 'nmdc:omprc-11-unclaimed1'))).json;
    const held = (await createJob(jobRec(workflowId, 'nmdc:omprc-11-unclaimed2'))).json;
    const released = (await createJob(jobRec(workflowId, 'nmdc:omprc-11-unclaimed3'))).json;
    await claimJob(held.id);
    await claimJob(released.id);
    expect((await postWithoutBody(`/jobs/${released.id}:release`)).status).toBe(200);
    const filt = {
      $and: [
        { 'workflow.id': { $in: [workflowId, 'Not scheduled: v0'] } },
        {
          $or: [{ claims: { $size: 0 } }, { claims: { $not: { $elemMatch: { cancelled: { $ne: true } } } } }],
        },
      ],
    };
    const { targets, results } = await listJobs(filt);
    expect(targets[0]).toBe(
      `/jobs?${requestsQuery([
        ['max_page_size', 100],
        ['filter', jsonDumps(filt)],
      ])}`,
    );
    expect(results.map((j) => j.id).sort()).toEqual([never.id, released.id].sort());
  });
});

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.claim_job, release_job; bin/release_jobs.sh', () => {
  it('watch_nmdc.Watcher.claim_jobs -> claim_job: the operation, claimed=False; a second claim 409 with claimed=True and the held operation in "id"', async () => {
    const job = (await createJob(jobRec('Claim: v1', 'nmdc:omprc-11-claim1'))).json;
    const first = await claimJob(job.id);
    expect(first.res.status, first.res.text).toBe(200);
    const op = (await server.store.getById('operations', first.res.json.id))!;
    expect(first.res.json).toEqual(op);
    expect(first.data).toEqual({ ...op, claimed: false });
    expect(op.metadata).toEqual({
      job: { id: job.id, workflow: job.workflow, config: job.config },
      site_id: SITE_ID,
      model: 'nmdc_runtime.api.models.job.JobOperationMetadata',
    });
    expect((await server.store.getById('jobs', job.id))!.claims as unknown[]).toEqual([
      { op_id: op.id, site_id: SITE_ID },
    ]);

    const second = await claimJob(job.id);
    expect(second.res.status).toBe(409);
    expect(second.data).toEqual({ detail: expect.stringContaining(op.id), id: op.id, claimed: true });
    // The watcher goes on with `claim["id"]`: the operation it already holds.
    expect(await server.store.find('operations', { 'metadata.job.id': job.id })).toHaveLength(1);
  });

  it("release_job: the job with this site's claims cancelled; 404 for an unknown job (the client logs and returns None)", async () => {
    const job = (await createJob(jobRec('Release: v1', 'nmdc:omprc-11-release1'))).json;
    const op = (await claimJob(job.id)).data;
    const res = await postWithoutBody(`/jobs/${job.id}:release`);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('jobs', job.id));
    expect(res.json.claims).toEqual([{ op_id: op.id, site_id: SITE_ID, done: true, cancelled: true }]);
    const { claimed: _claimed, ...claimedOp } = op;
    expect(await server.store.getById('operations', op.id as string)).toEqual({
      ...claimedOp,
      done: true,
      metadata: { ...(op.metadata as object), cancelled: true },
    });

    const missing = await postWithoutBody('/jobs/nmdc:sys0nosuchjob0:release');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ detail: 'Job nmdc:sys0nosuchjob0 not found' });
  });

  it("bin/release_jobs.sh: curl -X POST with the colon of the id as %3A, `-d ''` (a form Content-Type), accept and Bearer", async () => {
    const job = (await createJob(jobRec('Release script: v1', 'nmdc:omprc-11-release2'))).json;
    const op = (await claimJob(job.id)).data;
    const res = await send(server.url, {
      method: 'POST',
      target: `/jobs/${job.id.replace(':', '%3A')}:release`,
      headers: {
        'User-Agent': 'curl/8.5.0',
        // curl's own `Accept: */*` is replaced by the script's header.
        accept: 'application/json',
        Authorization: `Bearer ${siteToken}`,
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: '',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.claims).toEqual([{ op_id: op.id, site_id: SITE_ID, done: true, cancelled: true }]);
  });
});

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.list_ops, get_op, update_op', () => {
  it('watch_nmdc.RuntimeApiHandler.update_operation -> update_op(opid, done=True, meta=job metadata): get_op, then PATCH with the metadata and extra', async () => {
    const job = (await createJob(jobRec('Update op: v1', 'nmdc:omprc-11-update1'))).json;
    const op = (await claimJob(job.id)).data;
    const meta = {
      workflow_execution_id: 'nmdc:wfmgas-11-abc123.1',
      jaws_jobid: 'a1b2',
      status: 'Succeeded',
    };
    const res = await updateOp(op.id as string, true, undefined, meta);
    expect(res.status, res.text).toBe(200);
    const stored = (await server.store.getById('operations', op.id as string))!;
    expect(res.json).toEqual(stored);
    expect(stored).toEqual({
      id: op.id,
      done: true,
      expire_time: op.expire_time,
      metadata: { ...(op.metadata as object), extra: meta },
    });
    // The watcher logs `resp['id']`; the job's claim is now done.
    expect(res.json.id).toBe(op.id);
    expect((await server.store.getById('jobs', job.id))!.claims).toEqual([
      { op_id: op.id, site_id: SITE_ID, done: true },
    ]);
  });

  it('run_workflows.py -> update_operation(opid, done=False): `{"done": false}` only, metadata kept', async () => {
    const job = (await createJob(jobRec('Undone: v1', 'nmdc:omprc-11-undone1'))).json;
    const op = (await claimJob(job.id)).data;
    await updateOp(op.id as string, undefined, undefined, { note: 'started' });
    const res = await updateOp(op.id as string, false);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('operations', op.id as string));
    expect(res.json.done).toBe(false);
    expect(res.json.metadata.extra).toEqual({ note: 'started' });
  });

  it('list_ops(filt) pages with an f-string URL and &page_token appended; get_op answers each', async () => {
    const job = (await createJob(jobRec('List ops: v1', 'nmdc:omprc-11-listops'))).json;
    for (let i = 0; i < 3; i++) {
      const op = (await claimJob(job.id)).data;
      expect((await updateOp(op.id as string, true)).status).toBe(200);
    }
    const filt = { 'metadata.job.id': job.id, done: true };
    const { targets, results } = await listOps(filt, 2);
    expect(targets[0]).toBe(
      `/operations?max_page_size=2&filter=%7B%22metadata.job.id%22:%20%22${job.id}%22,%20%22done%22:%20true%7D`,
    );
    expect(targets).toHaveLength(2);
    expect(results).toEqual(await server.store.find('operations', filt));
    expect(results).toHaveLength(3);
    for (const op of results) expect((await getOp(op.id)).json).toEqual(op);
  });

  it('get_op of an unknown operation: 404, which the client does not retry', async () => {
    const res = await getOp('nmdc:sys0nosuchop000');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: 'Operation nmdc:sys0nosuchop000 not found' });
  });
});
