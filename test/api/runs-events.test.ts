/**
 * Runs and their OpenLineage events through the whole app (request and response validation
 * included): `POST /runs` records a run of a workflow with its REQUESTED event, the first site to
 * report on it carries it out and alone posts its events, the summary follows the latest event, a
 * terminal event ends the run, a run stays with its starter, administrators and that site, and a
 * metadata submission's run has its STARTED and COMPLETE events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { RUN_PRODUCER, RUN_SCHEMA_URL } from '../../src/runs/runs.ts';
import { READ_RUN_FORBIDDEN, REPORT_RUN_FORBIDDEN, RUN_EVENTS } from '../../src/runs/run-events.ts';
import { createTestApp, type TestApp, passwordToken, newSiteClient } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'runs-root', password: 'Qz4-harbor-lantern-62-egret' };
const STARTER = { username: 'runs-starter', password: 'Wm8-delta-quartz-19-plover' };
const OTHER = { username: 'runs-other', password: 'Jt3-canyon-ember-75-wren' };
const WORKFLOW = {
  id: 'runs-test-metag-1.0.0',
  name: 'Metagenome analysis',
  description: 'Metagenome analysis',
};
const JOB = {
  id: WORKFLOW.id,
  description: WORKFLOW.description,
  producer: RUN_PRODUCER,
  schemaURL: RUN_SCHEMA_URL,
};

let t: TestApp;
let admin: Record<string, string>;
let starter: Record<string, string>;
let other: Record<string, string>;
let site: Record<string, string>;
let rivalSite: Record<string, string>;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  admin = bearer(await passwordToken(t.app, ADMIN.username, ADMIN.password));
  for (const user of [STARTER, OTHER]) {
    const created = await request(t.app).post('/users').set(admin).send(user);
    expect(created.status, created.text).toBe(201);
  }
  starter = bearer(await passwordToken(t.app, STARTER.username, STARTER.password));
  other = bearer(await passwordToken(t.app, OTHER.username, OTHER.password));
  site = (await newSiteClient(t.app, admin, 'runs-lab')).client;
  rivalSite = (await newSiteClient(t.app, admin, 'runs-rival-lab')).client;
  await t.store.upsertMany('workflows', [{ ...WORKFLOW, capability_ids: [] }]);
}, 30_000);
afterAll(async () => t?.close());

async function requestRun(
  inputs: string[] = ['nmdc:dobj-11-abc123'],
  runConfig: Record<string, unknown> = { threads: 8 },
) {
  const res = await request(t.app)
    .post('/runs')
    .set(starter)
    .send({ job_id: WORKFLOW.id, run_config: runConfig, inputs });
  expect(res.status, res.text).toBe(200);
  return res.body as { id: string };
}

const event = (runId: string, type: string, extra: Record<string, unknown> = {}) => ({
  producer: 'https://example.org/site-worker',
  schemaURL: RUN_SCHEMA_URL,
  run: { id: runId },
  job: JOB,
  type,
  time: new Date().toISOString(),
  ...extra,
});

const postEvent = (auth: Record<string, string>, runId: string, body: object) =>
  request(t.app).post(`/runs/${runId}/events`).set(auth).send(body);

describe('POST /runs', () => {
  it('records the run of a workflow with its REQUESTED event and answers the summary', async () => {
    const res = await request(t.app)
      .post('/runs')
      .set(starter)
      .send({ job_id: WORKFLOW.id, run_config: { threads: 8 }, inputs: ['nmdc:dobj-11-abc123'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^nmdc:sys0[0-9a-z]{12}$/),
      status: 'REQUESTED',
      started_at_time: expect.any(String),
      was_started_by: STARTER.username,
      inputs: ['nmdc:dobj-11-abc123'],
      outputs: [],
      job: JOB,
      producer: STARTER.username,
      schemaURL: RUN_SCHEMA_URL,
    });
    const runId = res.body.id as string;

    const got = await request(t.app).get(`/runs/${runId}`).set(starter);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(res.body);

    const events = await request(t.app).get(`/runs/${runId}/events`).set(starter);
    expect(events.status, events.text).toBe(200);
    expect(events.body).toEqual({
      resources: [
        {
          producer: STARTER.username,
          schemaURL: RUN_SCHEMA_URL,
          run: { id: runId, facets: { nmdcRuntime_runConfig: { threads: 8 } } },
          job: JOB,
          type: 'REQUESTED',
          time: res.body.started_at_time,
          inputs: ['nmdc:dobj-11-abc123'],
          outputs: [],
        },
      ],
    });
  });

  it("takes job_id as a query parameter with run_config and inputs in the body (the original's shape)", async () => {
    const res = await request(t.app)
      .post('/runs')
      .query({ job_id: WORKFLOW.id })
      .set(starter)
      .send({ run_config: {}, inputs: ['nmdc:dobj-11-q1'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'REQUESTED', inputs: ['nmdc:dobj-11-q1'], job: JOB });
  });

  it('answers 404 naming a job_id that is no workflow, and writes nothing', async () => {
    const before = await t.store.count(RUN_EVENTS, {});
    const res = await request(t.app).post('/runs').set(starter).send({ job_id: 'no-such-workflow-9.9' });
    expect(res.status, res.text).toBe(404);
    expect(res.body.detail).toContain('no-such-workflow-9.9');
    expect(await t.store.count(RUN_EVENTS, {})).toBe(before);
  });

  it('answers 422 without a job_id, and 401 without a token', async () => {
    const missing = await request(t.app).post('/runs').set(starter).send({ inputs: [] });
    expect(missing.status, missing.text).toBe(422);
    expect(missing.body.detail).toContain('job_id');
    const anonymous = await request(t.app).post('/runs').send({ job_id: WORKFLOW.id });
    expect(anonymous.status).toBe(401);
  });
});

describe('POST /runs/{run_id}/events', () => {
  it('records events in order; the status follows the latest; outputs add up; COMPLETE ends the run', async () => {
    const { id: runId } = await requestRun();

    const started = await postEvent(site, runId, event(runId, 'STARTED', { time: '2025-06-02T14:05:00Z' }));
    expect(started.status, started.text).toBe(200);
    expect(started.body).toEqual({
      ...event(runId, 'STARTED', { time: '2025-06-02T14:05:00Z' }),
      inputs: [],
      outputs: [],
    });
    expect((await request(t.app).get(`/runs/${runId}`).set(starter)).body).toMatchObject({
      status: 'STARTED',
      producer: 'https://example.org/site-worker',
    });

    const completed = await postEvent(
      site,
      runId,
      event(runId, 'COMPLETE', {
        time: '2025-06-02T15:00:00Z',
        outputs: ['nmdc:dobj-11-out1', 'nmdc:dobj-11-out2'],
      }),
    );
    expect(completed.status, completed.text).toBe(200);

    const summary = await request(t.app).get(`/runs/${runId}`).set(starter);
    expect(summary.body).toMatchObject({
      id: runId,
      status: 'COMPLETE',
      was_started_by: STARTER.username,
      inputs: ['nmdc:dobj-11-abc123'],
      outputs: ['nmdc:dobj-11-out1', 'nmdc:dobj-11-out2'],
      ended_at_time: '2025-06-02T15:00:00Z',
    });

    const events = await request(t.app).get(`/runs/${runId}/events`).set(starter);
    expect(events.body.resources.map((e: { type: string }) => e.type)).toEqual([
      'REQUESTED',
      'STARTED',
      'COMPLETE',
    ]);
    expect(events.body.next_page_token).toBeUndefined();

    const after = await postEvent(site, runId, event(runId, 'STARTED'));
    expect(after.status, after.text).toBe(409);
    expect(after.body.detail).toContain(runId);
    expect(after.body.detail).toContain('COMPLETE');
    expect((await request(t.app).get(`/runs/${runId}/events`).set(starter)).body.resources).toHaveLength(3);
  });

  it('refuses an event after FAIL too (409 naming FAIL)', async () => {
    const { id: runId } = await requestRun();
    expect((await postEvent(site, runId, event(runId, 'FAIL'))).status).toBe(200);
    const res = await postEvent(admin, runId, event(runId, 'COMPLETE'));
    expect(res.status, res.text).toBe(409);
    expect(res.body.detail).toContain('FAIL');
  });

  it('lets exactly one of two terminal events sent at once through; the other gets 409', async () => {
    const { id: runId } = await requestRun();
    const answers = await Promise.all([
      postEvent(site, runId, event(runId, 'COMPLETE')),
      postEvent(admin, runId, event(runId, 'FAIL')),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const winner = answers.find((a) => a.status === 200)!.body.type as string;
    expect((await request(t.app).get(`/runs/${runId}`).set(starter)).body.status).toBe(winner);
    const events = await request(t.app).get(`/runs/${runId}/events`).set(starter);
    expect(events.body.resources.map((e: { type: string }) => e.type)).toEqual(['REQUESTED', winner]);
  });

  it('answers 422 when run.id is not the run of the URL, and writes nothing', async () => {
    const { id: runId } = await requestRun();
    const res = await postEvent(site, runId, event('nmdc:sys0someotherrun', 'STARTED'));
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toContain('run.id');
    expect((await request(t.app).get(`/runs/${runId}`).set(starter)).body.status).toBe('REQUESTED');
  });

  it('answers 422 for an unknown event type and 404 for an unknown run', async () => {
    const { id: runId } = await requestRun();
    const badType = await postEvent(site, runId, event(runId, 'PAUSED'));
    expect(badType.status, badType.text).toBe(422);
    const unknown = await postEvent(site, 'nmdc:sys0nosuchrun00', event('nmdc:sys0nosuchrun00', 'STARTED'));
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.body.detail).toContain('nmdc:sys0nosuchrun00');
  });

  it("takes producer, schemaURL, type and time as query parameters (the original's shape)", async () => {
    const { id: runId } = await requestRun();
    const res = await request(t.app)
      .post(`/runs/${runId}/events`)
      .query({ producer: 'site-x', schemaURL: RUN_SCHEMA_URL, type: 'STARTED', time: '2025-06-02T14:05:00Z' })
      .set(site)
      .send({ run: { id: runId }, job: JOB, inputs: [], outputs: [] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ producer: 'site-x', type: 'STARTED', time: '2025-06-02T14:05:00Z' });
  });
});

describe('who may read and report a run', () => {
  it('refuses another user (403) reading or reporting; the starter reads but does not report', async () => {
    const { id: runId } = await requestRun();
    for (const path of [`/runs/${runId}`, `/runs/${runId}/events`]) {
      const refused = await request(t.app).get(path).set(other);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toEqual({ detail: READ_RUN_FORBIDDEN });
      expect((await request(t.app).get(path).set(starter)).status).toBe(200);
      expect((await request(t.app).get(path).set(admin)).status).toBe(200);
    }
    for (const auth of [other, starter]) {
      const posted = await postEvent(auth, runId, event(runId, 'STARTED'));
      expect(posted.status, posted.text).toBe(403);
      expect(posted.body).toEqual({ detail: REPORT_RUN_FORBIDDEN });
    }
    expect((await request(t.app).get(`/runs/${runId}`).set(starter)).body.status).toBe('REQUESTED');
  });

  it('keeps a run, run_config included, from every site until one reports on it; that site then reads it', async () => {
    const { id: runId } = await requestRun(['nmdc:dobj-11-secret'], { token_for_bucket: 'do-not-share' });
    for (const path of [`/runs/${runId}`, `/runs/${runId}/events`]) {
      const refused = await request(t.app).get(path).set(site);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toEqual({ detail: READ_RUN_FORBIDDEN });
    }
    expect((await postEvent(site, runId, event(runId, 'STARTED'))).status).toBe(200);
    const events = await request(t.app).get(`/runs/${runId}/events`).set(site);
    expect(events.status, events.text).toBe(200);
    expect(events.body.resources[0].run.facets).toEqual({
      nmdcRuntime_runConfig: { token_for_bucket: 'do-not-share' },
    });
    // The site carrying the run out is the service's business: the summary stays the original's.
    const summary = await request(t.app).get(`/runs/${runId}`).set(site);
    expect(summary.body).not.toHaveProperty('carried_out_by');
  });

  it("refuses another site's client reading the run or posting FAIL to it once a site carries it out", async () => {
    const { id: runId } = await requestRun(['nmdc:dobj-11-abc123'], { threads: 16 });
    expect((await postEvent(site, runId, event(runId, 'STARTED'))).status).toBe(200);

    for (const path of [`/runs/${runId}`, `/runs/${runId}/events`]) {
      const read = await request(t.app).get(path).set(rivalSite);
      expect(read.status, read.text).toBe(403);
      expect(read.body).toEqual({ detail: READ_RUN_FORBIDDEN });
    }
    const failed = await postEvent(rivalSite, runId, event(runId, 'FAIL'));
    expect(failed.status, failed.text).toBe(403);
    expect(failed.body).toEqual({ detail: REPORT_RUN_FORBIDDEN });
    // Another client of the same site reports on as the site.
    const sameSite = (await request(t.app).post('/sites/runs-lab:generateCredentials').set(admin)).body;
    const login = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'client_credentials', ...sameSite });
    const colleague = bearer(login.body.access_token);
    expect((await postEvent(colleague, runId, event(runId, 'COMPLETE'))).status).toBe(200);
    const summary = await request(t.app).get(`/runs/${runId}`).set(starter);
    expect(summary.body.status).toBe('COMPLETE');
    const types = (await request(t.app).get(`/runs/${runId}/events`).set(starter)).body.resources.map(
      (e: { type: string }) => e.type,
    );
    expect(types).toEqual(['REQUESTED', 'STARTED', 'COMPLETE']);
  });

  it('lets exactly one of two sites reporting at once take a run on', async () => {
    const { id: runId } = await requestRun();
    const answers = await Promise.all([
      postEvent(site, runId, event(runId, 'STARTED')),
      postEvent(rivalSite, runId, event(runId, 'STARTED')),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 403]);
    const [winner, loser] = answers[0]!.status === 200 ? [site, rivalSite] : [rivalSite, site];
    expect((await request(t.app).get(`/runs/${runId}`).set(winner)).status).toBe(200);
    expect((await request(t.app).get(`/runs/${runId}`).set(loser)).status).toBe(403);
  });
});

describe('GET /runs/{run_id}/events', () => {
  it('pages with tokens in the order events were recorded', async () => {
    const { id: runId } = await requestRun();
    expect((await postEvent(site, runId, event(runId, 'STARTED'))).status).toBe(200);
    expect(
      (await postEvent(site, runId, event(runId, 'COMPLETE', { outputs: ['nmdc:dobj-11-x'] }))).status,
    ).toBe(200);
    const types: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const res = await request(t.app)
        .get(`/runs/${runId}/events`)
        .query({ max_page_size: 1, ...(token ? { page_token: token } : {}) })
        .set(starter);
      expect(res.status, res.text).toBe(200);
      expect(res.body.resources).toHaveLength(1);
      types.push(res.body.resources[0].type);
      token = res.body.next_page_token;
      pages++;
    } while (token && pages < 10);
    expect(types).toEqual(['REQUESTED', 'STARTED', 'COMPLETE']);
  });

  it('answers 404 for an unknown run', async () => {
    const res = await request(t.app).get('/runs/nmdc:sys0nosuchrun11/events').set(admin);
    expect(res.status).toBe(404);
  });
});

describe("a metadata submission's run", () => {
  it('has its STARTED and COMPLETE events, written with the run; it takes no more', async () => {
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set(admin)
      .send({ username: STARTER.username, action: '/metadata/json:submit' });
    expect(granted.status, granted.text).toBe(201);
    const submitted = await request(t.app).post('/metadata/json:submit').set(starter).send({});
    expect(submitted.status, submitted.text).toBe(200);
    const runId = submitted.body.detail.run_id as string;

    const run = await request(t.app).get(`/runs/${runId}`).set(starter);
    expect(run.status, run.text).toBe(200);
    expect(run.body.status).toBe('COMPLETE');
    expect(run.body).not.toHaveProperty('event_count');

    const events = await request(t.app).get(`/runs/${runId}/events`).set(starter);
    expect(events.status, events.text).toBe(200);
    const job = {
      id: 'metadata-in-1.0.0',
      description: expect.any(String),
      producer: RUN_PRODUCER,
      schemaURL: RUN_SCHEMA_URL,
    };
    expect(events.body.resources).toEqual([
      {
        producer: RUN_PRODUCER,
        schemaURL: RUN_SCHEMA_URL,
        run: { id: runId, facets: {} },
        job,
        type: 'STARTED',
        time: run.body.started_at_time,
        inputs: [run.body.object_id],
        outputs: [],
      },
      {
        producer: RUN_PRODUCER,
        schemaURL: RUN_SCHEMA_URL,
        run: { id: runId, facets: {} },
        job,
        type: 'COMPLETE',
        time: expect.any(String),
        inputs: [],
        outputs: [],
      },
    ]);
    // Still private to its starter: a site client may neither read nor report a submission's run.
    expect((await request(t.app).get(`/runs/${runId}/events`).set(site)).status).toBe(403);
    const more = await postEvent(site, runId, event(runId, 'STARTED'));
    expect(more.status, more.text).toBe(403);
    expect(more.body).toEqual({ detail: REPORT_RUN_FORBIDDEN });
    const late = await postEvent(admin, runId, event(runId, 'STARTED'));
    expect(late.status, late.text).toBe(409);
    expect(late.body.detail).toContain('COMPLETE');
  });
});
