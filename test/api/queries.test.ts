import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import { RecordWriter } from '../../search/writer.ts';

let t: TestApp;
let adminToken: string;
let userToken: string;

const STUDY = 'nmdc:sty-11-q000';
const term = (id: string) => ({
  type: 'nmdc:ControlledIdentifiedTermValue',
  term: { id, type: 'nmdc:OntologyClass' },
});
/** Valid records of the schema: updates are validated against it. */
const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-q${String(n).padStart(3, '0')}`,
  type: 'nmdc:Biosample',
  name: n % 3 ? `Forest soil core ${n}` : `Lake sediment ${n}`,
  associated_studies: [STUDY],
  env_broad_scale: term('ENVO:00000446'),
  env_local_scale: term('ENVO:00000114'),
  env_medium: term('ENVO:00001998'),
  ecosystem_type: n % 3 ? 'Soil' : 'Sediment',
  depth: { type: 'nmdc:QuantityValue', has_numeric_value: n, has_unit: 'm' },
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
  t = await createTestApp({ ADMIN_USERNAME: 'root-admin', ADMIN_PASSWORD: 'correct horse battery staple' });
  await t.store.upsertMany('study_set', [
    { id: STUDY, type: 'nmdc:Study', name: 'Query study', study_category: 'research_study' },
  ]);
  const docs = Array.from({ length: 250 }, (_, i) => biosample(i));
  await t.store.upsertMany('biosample_set', docs);
  await t.searchIndex.index('biosample_set', docs);
  adminToken = await login('root-admin', 'correct horse battery staple');
  await request(t.app)
    .post('/users')
    .set('Authorization', `Bearer ${adminToken}`)
    .send({ username: 'reader', password: 'a long enough reader password' })
    .expect(201);
  userToken = await login('reader', 'a long enough reader password');
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
    // 2.13.0 clients read `batch`; it holds the same records.
    expect(first.body.cursor.batch).toEqual(first.body.cursor.firstBatch);
    const ids: string[] = first.body.cursor.firstBatch.map((d: Doc) => d.id);
    let cursorId = first.body.cursor.id;
    while (cursorId) {
      const more = await run(userToken, { getMore: cursorId, batchSize: 60 }).expect(200);
      ids.push(...more.body.cursor.nextBatch.map((d: Doc) => d.id));
      expect(more.body.cursor.batch).toEqual(more.body.cursor.nextBatch);
      cursorId = more.body.cursor.id;
    }
    const expected = Array.from({ length: 250 }, (_, i) => i)
      .filter((i) => i % 3)
      .reverse()
      .map((i) => `nmdc:bsm-11-q${String(i).padStart(3, '0')}`);
    expect(ids).toEqual(expected);
  });

  it("pages a getMore without a batchSize in the cursor's batch size, find and aggregate (4/4/2)", async () => {
    const filter = {
      id: { $in: Array.from({ length: 10 }, (_, i) => `nmdc:bsm-11-q${String(i + 40).padStart(3, '0')}`) },
    };
    const expected = (
      await run(userToken, { find: 'biosample_set', filter }).expect(200)
    ).body.cursor.batch.map((d: Doc) => d.id);
    expect(expected).toHaveLength(10);
    for (const [token, opening] of [
      [userToken, { find: 'biosample_set', filter, batchSize: 4 }],
      [adminToken, { aggregate: 'biosample_set', pipeline: [{ $match: filter }], cursor: { batchSize: 4 } }],
    ] as const) {
      const sizes: number[] = [];
      const ids: string[] = [];
      let res = await run(token, opening).expect(200);
      for (;;) {
        sizes.push(res.body.cursor.batch.length);
        ids.push(...res.body.cursor.batch.map((d: Doc) => d.id));
        if (!res.body.cursor.id) break;
        res = await run(token, { getMore: res.body.cursor.id }).expect(200);
      }
      expect(sizes, JSON.stringify(opening)).toEqual([4, 4, 2]);
      expect(ids).toEqual(expected);
    }
    // A getMore's own batchSize applies to it, and the cursor keeps its size after it.
    const first = await run(userToken, { find: 'biosample_set', filter, batchSize: 2 }).expect(200);
    const bigger = await run(userToken, { getMore: first.body.cursor.id, batchSize: 5 }).expect(200);
    expect(bigger.body.cursor.batch).toHaveLength(5);
    const after = await run(userToken, { getMore: bigger.body.cursor.id }).expect(200);
    expect(after.body.cursor.batch).toHaveLength(2);
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

  it('refuses aggregate, update and delete to users without the allowance, with the original messages', async () => {
    for (const [body, detail] of [
      [
        { aggregate: 'biosample_set', pipeline: [] },
        'Only specific users are allowed to issue aggregate commands.',
      ],
      [
        { update: 'biosample_set', updates: [{ q: {}, u: { $set: { x: 1 } } }] },
        'Only specific users are allowed to issue update and delete commands.',
      ],
      [
        { delete: 'biosample_set', deletes: [{ q: {}, limit: 0 }] },
        'Only specific users are allowed to issue update and delete commands.',
      ],
    ] as const) {
      const res = await run(userToken, body).expect(403);
      expect(res.body).toEqual({ detail });
    }
  });

  it('lets a user holding the aggregate allowance aggregate, and only aggregate', async () => {
    await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ username: 'analyst', password: 'an analyst password of length' })
      .expect(201);
    await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ username: 'analyst', action: '/queries:run(query_cmd:AggregateCommand)' })
      .expect(201);
    const analyst = await login('analyst', 'an analyst password of length');
    const res = await run(analyst, {
      aggregate: 'biosample_set',
      pipeline: [{ $match: { ecosystem_type: 'Sediment' } }, { $count: 'n' }],
    }).expect(200);
    expect(res.body.cursor.firstBatch).toEqual([{ n: 84 }]);
    const del = await run(analyst, { delete: 'biosample_set', deletes: [{ q: {}, limit: 0 }] }).expect(403);
    expect(del.body).toEqual({
      detail: 'Only specific users are allowed to issue update and delete commands.',
    });
  });

  it('lets a user holding the delete allowance update and delete', async () => {
    await request(t.app)
      .post('/users')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ username: 'curator', password: 'a curator password of length' })
      .expect(201);
    await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ username: 'curator', action: '/queries:run(query_cmd:DeleteCommand)' })
      .expect(201);
    const curator = await login('curator', 'a curator password of length');
    const doc = { ...biosample(900), id: 'nmdc:bsm-11-q900' };
    await new RecordWriter(t.store, t.searchIndex).upsert('biosample_set', [doc]);
    const upd = await run(curator, {
      update: 'biosample_set',
      updates: [{ q: { id: doc.id }, u: { $set: { name: 'Renamed by a curator' } } }],
    }).expect(200);
    expect(upd.body).toMatchObject({ ok: 1, n: 1, nModified: 1 });
    const del = await run(curator, {
      delete: 'biosample_set',
      deletes: [{ q: { id: doc.id }, limit: 1 }],
    }).expect(200);
    expect(del.body).toMatchObject({ ok: 1, n: 1 });
    expect(await t.store.getById('biosample_set', doc.id)).toBeNull();
    const agg = await run(curator, { aggregate: 'biosample_set', pipeline: [] }).expect(403);
    expect(agg.body).toEqual({ detail: 'Only specific users are allowed to issue aggregate commands.' });
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
    expect(res.body.cursor.batch).toEqual([{ _id: 'Sediment', n: 84 }]);
    const out = await run(adminToken, { aggregate: 'biosample_set', pipeline: [{ $out: 'x' }] }).expect(422);
    expect(out.body.detail).toContain('$out');
  });

  describe('aggregate with $lookup', () => {
    const generations: Doc[] = [
      {
        id: 'nmdc:dgns-11-q001',
        type: 'nmdc:NucleotideSequencing',
        has_input: ['nmdc:bsm-11-q001', 'nmdc:bsm-11-q002'],
        analyte_category: 'metagenome',
      },
      { id: 'nmdc:dgns-11-q002', type: 'nmdc:NucleotideSequencing', has_input: ['nmdc:bsm-11-q002'] },
    ];
    const executions: Doc[] = [
      { id: 'nmdc:wfmgas-11-q001.1', type: 'nmdc:MetagenomeAssembly', was_informed_by: 'nmdc:dgns-11-q001' },
      { id: 'nmdc:wfrqc-11-q001.1', type: 'nmdc:ReadQcAnalysis', was_informed_by: 'nmdc:dgns-11-q001' },
      { id: 'nmdc:wfmgas-11-q002.1', type: 'nmdc:MetagenomeAssembly', was_informed_by: 'nmdc:dgns-11-q002' },
    ];
    beforeAll(async () => {
      await t.store.upsertMany('data_generation_set', generations);
      await t.store.upsertMany('workflow_execution_set', executions);
    });
    const aggregate = (collection: string, pipeline: unknown[]) =>
      run(adminToken, { aggregate: collection, pipeline });

    it('joins on fields, an array local field matching any element, each record carrying _id', async () => {
      const res = await aggregate('data_generation_set', [
        { $match: { id: 'nmdc:dgns-11-q001' } },
        { $lookup: { from: 'biosample_set', localField: 'has_input', foreignField: 'id', as: 'inputs' } },
        { $project: { _id: 1, inputs: '$inputs.id' } },
      ]).expect(200);
      expect(res.body.cursor.batch).toEqual([
        { _id: 'nmdc:dgns-11-q001', inputs: ['nmdc:bsm-11-q001', 'nmdc:bsm-11-q002'] },
      ]);
    });

    it("groups on the joined records' _id to keep each once, as clients do", async () => {
      const res = await aggregate('biosample_set', [
        { $match: { id: { $in: ['nmdc:bsm-11-q001', 'nmdc:bsm-11-q002'] } } },
        { $lookup: { from: 'data_generation_set', localField: 'id', foreignField: 'has_input', as: 'dg' } },
        { $unwind: '$dg' },
        { $group: { _id: '$dg._id', dg: { $first: '$dg' } } },
        { $replaceWith: '$dg' },
        { $sort: { id: 1 } },
      ]).expect(200);
      expect(res.body.cursor.batch.map((d: Doc) => d.id)).toEqual(['nmdc:dgns-11-q001', 'nmdc:dgns-11-q002']);
      expect(res.body.cursor.batch[0]).toEqual({ _id: 'nmdc:dgns-11-q001', ...generations[0] });
    });

    it('runs the pipeline of the concise form on the joined records only', async () => {
      const res = await aggregate('data_generation_set', [
        { $match: { id: { $in: ['nmdc:dgns-11-q001', 'nmdc:dgns-11-q002'] } } },
        {
          $lookup: {
            from: 'workflow_execution_set',
            localField: 'id',
            foreignField: 'was_informed_by',
            pipeline: [{ $sort: { type: -1 } }, { $project: { _id: 0, id: 1 } }],
            as: 'runs',
          },
        },
        { $project: { _id: 0, id: 1, runs: 1 } },
        { $sort: { id: 1 } },
      ]).expect(200);
      expect(res.body.cursor.batch).toEqual([
        { id: 'nmdc:dgns-11-q001', runs: [{ id: 'nmdc:wfrqc-11-q001.1' }, { id: 'nmdc:wfmgas-11-q001.1' }] },
        { id: 'nmdc:dgns-11-q002', runs: [{ id: 'nmdc:wfmgas-11-q002.1' }] },
      ]);
    });

    it('joins with a pipeline alone, every foreign record a candidate', async () => {
      const res = await aggregate('data_generation_set', [
        { $match: { id: 'nmdc:dgns-11-q002' } },
        {
          $lookup: {
            from: 'workflow_execution_set',
            pipeline: [
              { $match: { type: 'nmdc:MetagenomeAssembly', id: { $regex: '-q00' } } },
              { $project: { _id: 0, id: 1 } },
              { $sort: { id: 1 } },
            ],
            as: 'assemblies',
          },
        },
        { $project: { _id: 0, assemblies: 1 } },
      ]).expect(200);
      expect(res.body.cursor.batch).toEqual([
        { assemblies: [{ id: 'nmdc:wfmgas-11-q001.1' }, { id: 'nmdc:wfmgas-11-q002.1' }] },
      ]);
    });

    it('evaluates $expr in $match stages, leading or not, and in a joined pipeline with let', async () => {
      const leading = await aggregate('workflow_execution_set', [
        { $match: { $expr: { $eq: ['$was_informed_by', 'nmdc:dgns-11-q002'] } } },
        { $project: { _id: 0, id: 1 } },
      ]).expect(200);
      expect(leading.body.cursor.batch).toEqual([{ id: 'nmdc:wfmgas-11-q002.1' }]);
      const later = await aggregate('data_generation_set', [
        { $match: { id: { $in: ['nmdc:dgns-11-q001', 'nmdc:dgns-11-q002'] } } },
        {
          $lookup: {
            from: 'workflow_execution_set',
            localField: 'id',
            foreignField: 'was_informed_by',
            as: 'runs',
          },
        },
        { $match: { $or: [{ $expr: { $gte: [{ $size: '$runs' }, 2] } }, { analyte_category: 'none' }] } },
        { $project: { _id: 0, id: 1 } },
      ]).expect(200);
      expect(later.body.cursor.batch).toEqual([{ id: 'nmdc:dgns-11-q001' }]);
      const correlated = await aggregate('data_generation_set', [
        { $match: { id: 'nmdc:dgns-11-q002' } },
        {
          $lookup: {
            from: 'workflow_execution_set',
            let: { dg: '$id' },
            pipeline: [
              { $match: { $expr: { $eq: ['$was_informed_by', '$$dg'] } } },
              { $project: { _id: 0, id: 1 } },
            ],
            as: 'runs',
          },
        },
        { $project: { _id: 0, runs: 1 } },
      ]).expect(200);
      expect(correlated.body.cursor.batch).toEqual([{ runs: [{ id: 'nmdc:wfmgas-11-q002.1' }] }]);
      // Filters of find and count stay without expressions.
      const find = await run(adminToken, {
        find: 'data_generation_set',
        filter: { $expr: { $eq: [1, 1] } },
      }).expect(422);
      expect(find.body.detail).toMatch(/^Operator \$expr is not allowed/);
    });

    it('joins nothing from a collection outside the schema, accounts included', async () => {
      for (const from of ['jobs', 'users', 'site_clients']) {
        const res = await aggregate('data_generation_set', [
          { $match: { id: 'nmdc:dgns-11-q001' } },
          { $lookup: { from, localField: 'id', foreignField: 'id', as: 'other' } },
          { $lookup: { from, pipeline: [], as: 'all' } },
          { $project: { _id: 0, other: 1, all: 1 } },
        ]).expect(200);
        expect(res.body.cursor.batch).toEqual([{ other: [], all: [] }]);
      }
    });

    it('refuses a $lookup anywhere but the top-level pipeline, and a half join', async () => {
      const nested = await aggregate('data_generation_set', [
        {
          $facet: {
            a: [{ $lookup: { from: 'biosample_set', localField: 'x', foreignField: 'id', as: 'b' } }],
          },
        },
      ]).expect(422);
      expect(nested.body.detail).toBe('$lookup is allowed only as a stage of the top-level pipeline');
      const half = await aggregate('data_generation_set', [
        { $lookup: { from: 'biosample_set', localField: 'has_input', as: 'b' } },
      ]).expect(422);
      expect(half.body.detail).toBe('pipeline[0].$lookup needs both localField and foreignField, or neither');
    });
  });

  it('answers records of a collection without ids without a store key, and pipelines see it as _id', async () => {
    const members = [1, 2, 3].map((n) => ({
      was_generated_by: `nmdc:wfmgan-11-q00${n}.1`,
      gene_function_id: 'KEGG.ORTHOLOGY:K01426',
      count: n,
      type: 'nmdc:FunctionalAnnotationAggMember',
    }));
    await new RecordWriter(t.store, t.searchIndex).upsert('functional_annotation_agg', members);
    const found = await run(userToken, {
      find: 'functional_annotation_agg',
      sort: { count: 1 },
      batchSize: 2,
    }).expect(200);
    expect(found.body.cursor.batch).toEqual(members.slice(0, 2));
    const more = await run(userToken, { getMore: found.body.cursor.id }).expect(200);
    expect(more.body.cursor.batch).toEqual(members.slice(2));
    const piped = await run(adminToken, {
      aggregate: 'functional_annotation_agg',
      pipeline: [{ $sort: { count: 1 } }],
    }).expect(200);
    expect(piped.body.cursor.batch).toEqual(
      members.map((m) => ({ _id: expect.stringMatching(/^key:/), ...m })),
    );
  });

  it('updates and deletes for administrators, keeping searches exact', async () => {
    const upd = await run(adminToken, {
      update: 'biosample_set',
      updates: [{ q: { id: 'nmdc:bsm-11-q004' }, u: { $set: { name: 'Glacier ice core 4' } } }],
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
