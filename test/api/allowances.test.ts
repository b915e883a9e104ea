/**
 * `/admin/allowances` through the whole app (request and response validation included): who may
 * manage allowances, the 201/409/204/404 answers of the original, the action enum, and creates
 * racing each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { ALLOWANCE_ACTIONS, setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, type TestApp, passwordToken } from '../support/server.ts';

setBcryptCost(4);

const ADMIN_PASSWORD = 'root-password-for-allowances';
const USER_PASSWORD = 'plain-user-password-for-allowances';

describe('allowances', () => {
  let t: TestApp;
  let admin: string;

  const login = (username: string, password: string) => passwordToken(t.app, username, password);

  /** A new non-administrator user and their token. */
  const newUser = async (username: string) => {
    const created = await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username, password: USER_PASSWORD });
    expect(created.status).toBe(201);
    return login(username, USER_PASSWORD);
  };

  beforeAll(async () => {
    t = await createTestApp({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD });
    admin = await login('root', ADMIN_PASSWORD);
  });
  afterAll(async () => t.close());

  it('lists the action names, sorted', async () => {
    const res = await request(t.app).get('/admin/allowances/actions').set('Authorization', `Bearer ${admin}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([...ALLOWANCE_ACTIONS].sort());
    expect(res.body).toContain('/queries:run(query_cmd:AggregateCommand)');
  });

  it('creates an allowance (201), refuses it twice (409), lists it, deletes it (204) and then 404', async () => {
    const allowance = { username: 'carol', action: '/metadata/json:submit' };
    const created = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send(allowance);
    expect(created.status).toBe(201);
    expect(created.body).toEqual(allowance);

    const again = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send(allowance);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      detail: "Allowance already exists for user 'carol' and action '/metadata/json:submit'",
    });

    const byUser = await request(t.app)
      .get('/admin/allowances')
      .query({ username: 'carol' })
      .set('Authorization', `Bearer ${admin}`);
    expect(byUser.status).toBe(200);
    expect(byUser.body).toEqual({ resources: [allowance] });

    const deleted = await request(t.app)
      .delete('/admin/allowances')
      .query(allowance)
      .set('Authorization', `Bearer ${admin}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');

    const gone = await request(t.app)
      .delete('/admin/allowances')
      .query(allowance)
      .set('Authorization', `Bearer ${admin}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      detail: "No allowance found for user 'carol' and action '/metadata/json:submit'",
    });
  });

  it('filters the list by username and by action', async () => {
    const grant = (username: string, action: string) =>
      request(t.app)
        .post('/admin/allowances')
        .set('Authorization', `Bearer ${admin}`)
        .send({ username, action });
    expect((await grant('dora', '/wf_file_staging')).status).toBe(201);
    expect((await grant('dora', '/metadata/changesheets:submit')).status).toBe(201);
    expect((await grant('emil', '/wf_file_staging')).status).toBe(201);

    const dora = await request(t.app)
      .get('/admin/allowances?username=dora')
      .set('Authorization', `Bearer ${admin}`);
    expect(dora.body).toEqual({
      resources: [
        { username: 'dora', action: '/metadata/changesheets:submit' },
        { username: 'dora', action: '/wf_file_staging' },
      ],
    });
    const staging = await request(t.app)
      .get('/admin/allowances')
      .query({ action: '/wf_file_staging' })
      .set('Authorization', `Bearer ${admin}`);
    expect(staging.body.resources).toEqual(
      expect.arrayContaining([
        { username: 'dora', action: '/wf_file_staging' },
        { username: 'emil', action: '/wf_file_staging' },
      ]),
    );
    expect(staging.body.resources.every((a: { action: string }) => a.action === '/wf_file_staging')).toBe(
      true,
    );
    const both = await request(t.app)
      .get('/admin/allowances')
      .query({ username: 'emil', action: '/wf_file_staging' })
      .set('Authorization', `Bearer ${admin}`);
    expect(both.body).toEqual({ resources: [{ username: 'emil', action: '/wf_file_staging' }] });
  });

  it('reads usernames and actions sent with reserved characters unencoded, as the original does', async () => {
    // `@`, `/`, `:`, `(` and `)` straight on the request line, as Python's requests sends them.
    const allowance = { username: 'lena@example.org', action: '/queries:run(query_cmd:AggregateCommand)' };
    const raw = `username=${allowance.username}&action=${allowance.action}`;
    const created = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send(allowance);
    expect(created.status).toBe(201);
    const listed = await request(t.app)
      .get(`/admin/allowances?${raw}`)
      .set('Authorization', `Bearer ${admin}`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({ resources: [allowance] });
    const deleted = await request(t.app)
      .delete(`/admin/allowances?${raw}`)
      .set('Authorization', `Bearer ${admin}`);
    expect(deleted.status, deleted.text).toBe(204);
    const gone = await request(t.app)
      .delete(`/admin/allowances?${raw}`)
      .set('Authorization', `Bearer ${admin}`);
    expect(gone.status).toBe(404);
    expect(gone.body.detail).toBe(
      "No allowance found for user 'lena@example.org' and action '/queries:run(query_cmd:AggregateCommand)'",
    );
  });

  it('answers 422 naming the allowed values for an unknown action', async () => {
    const res = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username: 'carol', action: '/delete/everything' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/action/);
    expect(res.body.detail).toContain('/metadata/json:submit');

    const listed = await request(t.app)
      .get('/admin/allowances')
      .query({ action: 'nonsense' })
      .set('Authorization', `Bearer ${admin}`);
    expect(listed.status).toBe(422);
    expect(listed.body.detail).toContain('/admin/allowances');
  });

  it('answers 403 to users who are neither administrators nor hold /admin/allowances', async () => {
    const token = await newUser('frank');
    const expected = { detail: 'Only admin users can manage allowances.' };
    const list = await request(t.app).get('/admin/allowances').set('Authorization', `Bearer ${token}`);
    expect(list.status).toBe(403);
    expect(list.body).toEqual(expected);
    const actions = await request(t.app)
      .get('/admin/allowances/actions')
      .set('Authorization', `Bearer ${token}`);
    expect(actions.status).toBe(403);
    expect(actions.body).toEqual(expected);
    const create = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${token}`)
      .send({ username: 'frank', action: '/admin/allowances' });
    expect(create.status).toBe(403);
    expect(create.body).toEqual(expected);
    const del = await request(t.app)
      .delete('/admin/allowances')
      .query({ username: 'frank', action: '/admin/allowances' })
      .set('Authorization', `Bearer ${token}`);
    expect(del.status).toBe(403);
    expect(del.body).toEqual(expected);
  });

  it('lets a holder of the /admin/allowances allowance manage allowances', async () => {
    const token = await newUser('gina');
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username: 'gina', action: '/admin/allowances' });
    expect(granted.status).toBe(201);
    const created = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${token}`)
      .send({ username: 'hugo', action: '/metadata/json:submit' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ username: 'hugo', action: '/metadata/json:submit' });
  });

  it('answers 401 without a token', async () => {
    const res = await request(t.app).get('/admin/allowances');
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/Access token/);
  });

  it('gives one 201 and one 409 when the same allowance is created twice at once', async () => {
    const allowance = { username: 'ivan', action: '/queries:run(query_cmd:DeleteCommand)' };
    const answers = await Promise.all(
      [0, 1].map(() =>
        request(t.app).post('/admin/allowances').set('Authorization', `Bearer ${admin}`).send(allowance),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const listed = await request(t.app)
      .get('/admin/allowances')
      .query({ username: 'ivan' })
      .set('Authorization', `Bearer ${admin}`);
    expect(listed.body).toEqual({ resources: [allowance] });
  });
});
