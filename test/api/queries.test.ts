import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

let t: TestApp;
let adminToken: string;
let userToken: string;

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-q${String(n).padStart(3, '0')}`,
  type: 'nmdc:Biosample',
  name: n % 3 ? `Forest soil core ${n}` : `Lake sediment ${n}`,
  ecosystem_type: n % 3 ? 'Soil' : 'Sediment',
  depth: { has_numeric_value: n },
});

async function login(username: string, password: string): Promise<string> {
  const res = await request(t.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username, password })
    .expect(200);
  return res.body.access_token;
}

const run = (token: string | undefined, body: unknown) => {
  const req = request(t.app)
    .post('/queries:run')
    .send(body as object);
  return token ? req.set('Authorization', `Bearer ${token}`) : req;
};

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: 'root-admin', ADMIN_PASSWORD: 'correct horse battery' });
  const docs = Array.from({ length: 250 }, (_, i) => biosample(i));
  await t.store.upsertMany('biosample_set', docs);
  await t.searchIndex.index('biosample_set', docs);
  adminToken = await login('root-admin', 'correct horse battery');
  await request(t.app)
    .post('/users')
    .set('Authorization', `Bearer ${adminToken}`)
    .send({ username: 'reader', password: 'a long enough password' })
    .expect(201);
  userToken = await login('reader', 'a long enough password');
});
afterAll(async () => t?.close());

describe('POST /queries:run', () => {
  it('needs a bearer token', async () => {
    const res = await run(undefined, { find: 'biosample_set' }).expect(401);
    expect(res.body.detail).toBe('Access token is invalid or missing. Please log in again.');
  });

  it('finds with a filter, projection and sort, then getMore to exhaustion', async () => {
    const first = await run(userToken, {
      find: 'biosample_set',
      filter: { ecosystem_type: 'Soil' },
      projection: { name: 1 },
      sort: { 'depth.has_numeric_value': -1 },
      batchSize: 60,
    }).expect(200);
    expect(first.body.ok).toBe(1);
    expect(first.body.cursor.ns).toMatch(/\.biosample_set$/);
    expect(first.body.cursor.firstBatch).toHaveLength(60);
    expect(Object.keys(first.body.cursor.firstBatch[0]).sort()).toEqual(['id', 'name']);
    expect(first.body.cursor.firstBatch[0].id).toBe('nmdc:bsm-11-q248');
    const ids: string[] = first.body.cursor.firstBatch.map((d: Doc) => d.id);
    let cursorId = first.body.cursor.id;
    while (cursorId) {
      const more = await run(userToken, { getMore: cursorId, batchSize: 60 }).expect(200);
      ids.push(...more.body.cursor.nextBatch.map((d: Doc) => d.id));
      cursorId = more.body.cursor.id;
    }
    const expected = Array.from({ length: 250 }, (_, i) => i)
      .filter((i) => i % 3)
      .reverse()
      .map((i) => `nmdc:bsm-11-q${String(i).padStart(3, '0')}`);
    expect(ids).toEqual(expected);
  });

  it('uses a default batch of 101 and honours limit', async () => {
    const all = await run(userToken, { find: 'biosample_set' }).expect(200);
    expect(all.body.cursor.firstBatch).toHaveLength(101);
    expect(typeof all.body.cursor.id).toBe('string');
    const limited = await run(userToken, { find: 'biosample_set', limit: 5 }).expect(200);
    expect(limited.body.cursor.firstBatch).toHaveLength(5);
    expect(limited.body.cursor.id).toBeNull();
  });

  it('counts matches, including $regex filters', async () => {
    const res = await run(userToken, {
      count: 'biosample_set',
      query: { name: { $regex: 'SEDIMENT', $options: 'i' } },
    }).expect(200);
    expect(res.body).toEqual({ ok: 1, n: 84 });
  });

  it('refuses forbidden operators with 422 naming them', async () => {
    const res = await run(userToken, { find: 'biosample_set', filter: { $where: 'true' } }).expect(422);
    expect(res.body.detail).toContain('$where');
  });

  it('refuses aggregate, update and delete to non-administrators', async () => {
    for (const body of [
      { aggregate: 'biosample_set', pipeline: [] },
      { update: 'biosample_set', updates: [{ q: {}, u: { $set: { x: 1 } } }] },
      { delete: 'biosample_set', deletes: [{ q: {}, limit: 0 }] },
    ]) {
      const res = await run(userToken, body).expect(403);
      expect(res.body.detail).toContain('administrators');
    }
  });

  it('aggregates for administrators and refuses $out and $merge', async () => {
    const res = await run(adminToken, {
      aggregate: 'biosample_set',
      pipeline: [
        { $match: { ecosystem_type: 'Sediment' } },
        { $group: { _id: '$ecosystem_type', n: { $sum: 1 } } },
      ],
    }).expect(200);
    expect(res.body.cursor.firstBatch).toEqual([{ _id: 'Sediment', n: 84 }]);
    const out = await run(adminToken, { aggregate: 'biosample_set', pipeline: [{ $out: 'x' }] }).expect(422);
    expect(out.body.detail).toContain('$out');
  });

  it('updates and deletes for administrators, keeping searches exact', async () => {
    const upd = await run(adminToken, {
      update: 'biosample_set',
      updates: [{ q: { id: 'nmdc:bsm-11-q001' }, u: { $set: { name: 'Glacier ice core 1' } } }],
    }).expect(200);
    expect(upd.body).toMatchObject({ ok: 1, n: 1, nModified: 1 });
    const found = await run(userToken, {
      count: 'biosample_set',
      query: { name: { $regex: 'glacier', $options: 'i' } },
    }).expect(200);
    expect(found.body.n).toBe(1);
    const del = await run(adminToken, {
      delete: 'biosample_set',
      deletes: [{ q: { name: { $regex: '^Glacier' } }, limit: 1 }],
    }).expect(200);
    expect(del.body).toEqual({ ok: 1, n: 1 });
    const after = await run(userToken, {
      count: 'biosample_set',
      query: { name: { $regex: 'glacier', $options: 'i' } },
    }).expect(200);
    expect(after.body.n).toBe(0);
  });

  it('answers 4xx naming the problem for a body without a command', async () => {
    const res = await run(userToken, { filter: {} });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(JSON.stringify(res.body.detail)).toContain('find');
  });
});
