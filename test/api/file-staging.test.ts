/**
 * `/wf_file_staging/...` through the whole app (request and response validation included): Globus
 * tasks, JGI samples and JGI sequencing projects are created, read, patched and listed by holders of
 * the `/wf_file_staging` allowance (a user, a site client by its client id, an administrator);
 * everyone else gets 403; duplicates 409; unknown keys 404.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, type TestApp, passwordToken } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'staging-root', password: 'Hq6-fjord-cobalt-33-tern' };
const STAFF = { username: 'staging-staff', password: 'Pv2-mesa-harbor-58-finch' };
const PLAIN = { username: 'staging-plain', password: 'Lx9-tundra-violet-24-crane' };

let t: TestApp;
let admin: Record<string, string>;
let staff: Record<string, string>;
let plain: Record<string, string>;
let site: Record<string, string>;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const unique = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  admin = bearer(await passwordToken(t.app, ADMIN.username, ADMIN.password));
  for (const user of [STAFF, PLAIN]) {
    const created = await request(t.app).post('/users').set(admin).send(user);
    expect(created.status, created.text).toBe(201);
  }
  expect((await request(t.app).post('/sites').set(admin).send({ id: 'staging-lab' })).status).toBe(201);
  const credentials = await request(t.app).post('/sites/staging-lab:generateCredentials').set(admin);
  expect(credentials.status, credentials.text).toBe(200);
  for (const username of [STAFF.username, credentials.body.client_id as string]) {
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set(admin)
      .send({ username, action: '/wf_file_staging' });
    expect(granted.status, granted.text).toBe(201);
  }
  staff = bearer(await passwordToken(t.app, STAFF.username, STAFF.password));
  plain = bearer(await passwordToken(t.app, PLAIN.username, PLAIN.password));
  const login = await request(t.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'client_credentials', ...credentials.body });
  expect(login.status, login.text).toBe(200);
  site = bearer(login.body.access_token);
}, 30_000);
afterAll(async () => t?.close());

function sample(jdpFileId: string, project: string, extra: Record<string, unknown> = {}) {
  return {
    jdp_file_id: jdpFileId,
    ap_gold_id: 'Ga0307276',
    gold_study_id: 'Gs0135149',
    its_ap_id: '1196479.0',
    sequencing_project_name: project,
    gold_biosample_id: 'Gb0191643',
    gold_seq_id: '1196479',
    file_name: 'filename.tar.gz',
    jdp_file_status: 'RESTORED',
    globus_file_status: 'ACTIVE',
    jdp_file_size: 123456,
    jgi_ap_id: '1196479',
    create_date: '2023-01-01T00:00:00Z',
    request_id: 1,
    ...extra,
  };
}

describe('/wf_file_staging/globus_tasks', () => {
  it('creates (201), reads, patches with only task_status, and lists a task', async () => {
    const taskId = unique('task');
    const created = await request(t.app)
      .post('/wf_file_staging/globus_tasks')
      .set(site)
      .send({ task_id: taskId, task_status: 'IN_PROGRESS', ignored_field: 'dropped' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({ task_id: taskId, task_status: 'IN_PROGRESS' });

    const got = await request(t.app).get(`/wf_file_staging/globus_tasks/${taskId}`).set(staff);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual({ task_id: taskId, task_status: 'IN_PROGRESS' });

    const patched = await request(t.app)
      .patch(`/wf_file_staging/globus_tasks/${taskId}`)
      .set(site)
      .send({ task_status: 'SUCCEEDED' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toEqual({ task_id: taskId, task_status: 'SUCCEEDED' });

    const full = await request(t.app)
      .patch(`/wf_file_staging/globus_tasks/${taskId}`)
      .set(site)
      .send({ task_id: taskId, task_status: 'FAILED' });
    expect(full.status, full.text).toBe(200);
    expect(full.body).toEqual({ task_id: taskId, task_status: 'FAILED' });

    const listed = await request(t.app)
      .get('/wf_file_staging/globus_tasks')
      .query({ filter: JSON.stringify({ task_id: taskId }) })
      .set(admin);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({ resources: [{ task_id: taskId, task_status: 'FAILED' }] });
  });

  it('refuses a duplicate task_id with 409 and keeps the first', async () => {
    const taskId = unique('task');
    const first = await request(t.app)
      .post('/wf_file_staging/globus_tasks')
      .set(site)
      .send({ task_id: taskId, task_status: 'ACTIVE' });
    expect(first.status).toBe(201);
    const again = await request(t.app)
      .post('/wf_file_staging/globus_tasks')
      .set(site)
      .send({ task_id: taskId, task_status: 'PENDING' });
    expect(again.status, again.text).toBe(409);
    expect(again.body).toEqual({ detail: `Globus task with task_id ${taskId} already exists.` });
    const got = await request(t.app).get(`/wf_file_staging/globus_tasks/${taskId}`).set(site);
    expect(got.body.task_status).toBe('ACTIVE');
  });

  it('answers 404 for an unknown task (read and patch), 400 when the body names another task', async () => {
    const missing = await request(t.app).get('/wf_file_staging/globus_tasks/no-such-task').set(site);
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain('no-such-task');
    const patchMissing = await request(t.app)
      .patch('/wf_file_staging/globus_tasks/no-such-task')
      .set(site)
      .send({ task_status: 'ACTIVE' });
    expect(patchMissing.status).toBe(404);

    const taskId = unique('task');
    await request(t.app)
      .post('/wf_file_staging/globus_tasks')
      .set(site)
      .send({ task_id: taskId, task_status: 'ACTIVE' });
    const mismatch = await request(t.app)
      .patch(`/wf_file_staging/globus_tasks/${taskId}`)
      .set(site)
      .send({ task_id: 'another-task', task_status: 'FAILED' });
    expect(mismatch.status, mismatch.text).toBe(400);
    expect(mismatch.body).toEqual({ detail: 'task_id in path and body must match.' });
  });

  it('answers 422 naming a missing or mistyped field', async () => {
    const missing = await request(t.app)
      .post('/wf_file_staging/globus_tasks')
      .set(site)
      .send({ task_id: unique('task') });
    expect(missing.status, missing.text).toBe(422);
    expect(missing.body.detail).toContain('task_status');
  });
});

describe('/wf_file_staging/jgi_samples', () => {
  it('creates a sample keyed by jdp_file_id (unset optional fields stay unset), patches and lists it', async () => {
    const project = unique('project');
    const fileId = unique('jdp');
    const created = await request(t.app)
      .post('/wf_file_staging/jgi_samples')
      .set(site)
      .send(sample(fileId, project, { create_date: '2023-01-01 06:30:00', request_id: '17' }));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual(
      sample(fileId, project, { create_date: '2023-01-01T06:30:00Z', request_id: 17 }),
    );

    const patched = await request(t.app)
      .patch(`/wf_file_staging/jgi_samples/${fileId}`)
      .set(site)
      .send({ jdp_file_status: 'READY', update_date: '2023-01-02T10:30:00+02:00' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toEqual(
      sample(fileId, project, {
        create_date: '2023-01-01T06:30:00Z',
        request_id: 17,
        jdp_file_status: 'READY',
        update_date: '2023-01-02T08:30:00Z',
      }),
    );

    const listed = await request(t.app)
      .get('/wf_file_staging/jgi_samples')
      .query({
        filter: JSON.stringify({ sequencing_project_name: project, jdp_file_status: { $ne: 'RESTORED' } }),
        projection: 'jdp_file_id,jdp_file_status',
      })
      .set(staff);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({ resources: [{ jdp_file_id: fileId, jdp_file_status: 'READY' }] });
  });

  it('refuses a duplicate (409), a mismatched patch (400), an unknown sample (404) and bad fields (422)', async () => {
    const project = unique('project');
    const fileId = unique('jdp');
    expect(
      (await request(t.app).post('/wf_file_staging/jgi_samples').set(site).send(sample(fileId, project)))
        .status,
    ).toBe(201);
    const again = await request(t.app)
      .post('/wf_file_staging/jgi_samples')
      .set(site)
      .send(sample(fileId, project));
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: `JGI sample with jdp_file_id ${fileId} already exists.` });

    const mismatch = await request(t.app)
      .patch(`/wf_file_staging/jgi_samples/${fileId}`)
      .set(site)
      .send({ jdp_file_id: 'other', jdp_file_status: 'READY' });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.detail).toBe('Cannot modify jdp_file_id (jdp_file_id in path and body must match).');

    const unknown = await request(t.app)
      .patch('/wf_file_staging/jgi_samples/no-such-file')
      .set(site)
      .send({ jdp_file_status: 'READY' });
    expect(unknown.status).toBe(404);

    const { request_id: _omitted, ...withoutRequestId } = sample(unique('jdp'), project);
    const missing = await request(t.app)
      .post('/wf_file_staging/jgi_samples')
      .set(site)
      .send(withoutRequestId);
    expect(missing.status, missing.text).toBe(422);
    expect(missing.body.detail).toContain('request_id');

    const badDate = await request(t.app)
      .post('/wf_file_staging/jgi_samples')
      .set(site)
      .send(sample(unique('jdp'), project, { create_date: 'last tuesday' }));
    expect(badDate.status, badDate.text).toBe(422);
    expect(badDate.body.detail).toContain('create_date');
  });

  it('lists with filter=null (every sample), pages with tokens in jdp_file_id order', async () => {
    const project = unique('paged');
    const ids = [unique('jdp-p'), unique('jdp-p'), unique('jdp-p')].sort();
    for (const id of ids) {
      expect(
        (await request(t.app).post('/wf_file_staging/jgi_samples').set(site).send(sample(id, project)))
          .status,
      ).toBe(201);
    }
    const all = await request(t.app)
      .get('/wf_file_staging/jgi_samples')
      .query({ filter: 'null', max_page_size: 0 })
      .set(site);
    expect(all.status, all.text).toBe(200);
    expect(all.body.resources.map((r: { jdp_file_id: string }) => r.jdp_file_id)).toEqual(
      expect.arrayContaining(ids),
    );
    expect(all.body.next_page_token).toBeUndefined();

    const seen: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await request(t.app)
        .get('/wf_file_staging/jgi_samples')
        .query(
          token
            ? { page_token: token, max_page_size: 2 }
            : { filter: JSON.stringify({ sequencing_project_name: project }), max_page_size: 2 },
        )
        .set(site);
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.resources.map((r: { jdp_file_id: string }) => r.jdp_file_id));
      token = res.body.next_page_token;
      if (!token) break;
    }
    expect(seen).toEqual(ids);
  });
});

describe('/wf_file_staging/jgi_sequencing_projects', () => {
  it('creates (201), reads by name (spaces and all), lists, and refuses a duplicate name (409)', async () => {
    const name = `${unique('Human Genome')} Project`;
    const project = {
      sequencing_project_name: name,
      sequencing_project_description: 'A project to sequence the human genome.',
      jgi_proposal_id: '503568',
      nmdc_study_id: 'nmdc:sty-11-28tm5d36',
    };
    const created = await request(t.app)
      .post('/wf_file_staging/jgi_sequencing_projects')
      .set(staff)
      .send(project);
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual(project);

    const got = await request(t.app)
      .get(`/wf_file_staging/jgi_sequencing_projects/${encodeURIComponent(name)}`)
      .set(staff);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(project);

    const listed = await request(t.app)
      .get('/wf_file_staging/jgi_sequencing_projects')
      .query({ filter: JSON.stringify({ sequencing_project_name: name }) })
      .set(staff);
    expect(listed.body).toEqual({ resources: [project] });

    const again = await request(t.app)
      .post('/wf_file_staging/jgi_sequencing_projects')
      .set(staff)
      .send(project);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      detail: `JGISequencingProject with sequencing_project_name ${name} already exists.`,
    });

    const missing = await request(t.app)
      .get('/wf_file_staging/jgi_sequencing_projects/No%20such%20project')
      .set(staff);
    expect(missing.status).toBe(404);
  });
});

describe('the /wf_file_staging allowance', () => {
  const calls: Array<[string, string, object?]> = [
    ['get', '/wf_file_staging/globus_tasks'],
    ['post', '/wf_file_staging/globus_tasks', { task_id: 'refused-task', task_status: 'ACTIVE' }],
    ['get', '/wf_file_staging/globus_tasks/refused-task'],
    ['patch', '/wf_file_staging/globus_tasks/refused-task', { task_status: 'ACTIVE' }],
    ['get', '/wf_file_staging/jgi_samples'],
    ['post', '/wf_file_staging/jgi_samples', sample('refused-file', 'refused-project')],
    ['patch', '/wf_file_staging/jgi_samples/refused-file', { jdp_file_status: 'READY' }],
    ['get', '/wf_file_staging/jgi_sequencing_projects'],
    [
      'post',
      '/wf_file_staging/jgi_sequencing_projects',
      {
        sequencing_project_name: 'refused',
        sequencing_project_description: 'x',
        jgi_proposal_id: '1',
        nmdc_study_id: 'nmdc:sty-11-x',
      },
    ],
    ['get', '/wf_file_staging/jgi_sequencing_projects/refused'],
  ];

  it.each(calls)(
    '%s %s: 403 without the allowance, 401 without a token, nothing written',
    async (method, path, body) => {
      const call = (auth?: Record<string, string>) => {
        let req = (request(t.app) as unknown as Record<string, (p: string) => request.Test>)[method]!(path);
        if (auth) req = req.set(auth);
        return body ? req.send(body) : req;
      };
      const refused = await call(plain);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toEqual({
        detail: 'Only specific users are allowed to issue wf_file_staging commands.',
      });
      expect((await call()).status).toBe(401);
    },
  );

  it('left nothing behind from the refused calls', async () => {
    expect(await t.store.getById('wf_file_staging.globus_tasks', 'refused-task')).toBeNull();
    expect(await t.store.getById('wf_file_staging.jgi_samples', 'refused-file')).toBeNull();
    expect(await t.store.getById('wf_file_staging.jgi_sequencing_projects', 'refused')).toBeNull();
  });
});
