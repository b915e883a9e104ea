/**
 * `POST /queries:run` with `explain`: the planner's chosen and rejected access paths, their
 * estimates, and (executionStats) what the read actually did, on the embedded store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createTestApp, passwordToken, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';

let t: TestApp;
let token: string;
const logLines: string[] = [];
const C = 'biosample_set';
const N = 5000;

/** 40% of the records are at Toolik Lake; one in a thousand names a rare river. */
const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-x${String(n).padStart(5, '0')}`,
  type: 'nmdc:Biosample',
  name: n % 1000 === 7 ? `Sediment sample ${n} Quillayute river` : `Soil sample ${n}`,
  geo_loc_name: { has_raw_value: n % 5 < 2 ? 'USA: Alaska, Toolik Lake' : 'USA: Michigan, Kellogg' },
  ecosystem_type: n % 2 ? 'Soil' : 'Sediment',
});

const run = (body: unknown) =>
  request(t.app)
    .post('/queries:run')
    .set('Authorization', `Bearer ${token}`)
    .send(body as object);

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  t = await createTestApp(
    { ADMIN_USERNAME: 'plan-admin', ADMIN_PASSWORD: 'explain the chosen plan please' },
    { logger: pino({ level: 'debug' }, sink) },
  );
  const docs = Array.from({ length: N }, (_, i) => biosample(i));
  await t.store.upsertMany(C, docs);
  await t.searchIndex.index(C, docs);
  token = await passwordToken(t.app, 'plan-admin', 'explain the chosen plan please');
});
afterAll(async () => t?.close());

describe('explain', () => {
  it('walks in id order for a broad predicate and stops at the limit', async () => {
    const filter = { 'geo_loc_name.has_raw_value': { $regex: 'Toolik' } };
    const res = await run({ explain: { find: C, filter, limit: 25 }, verbosity: 'executionStats' }).expect(
      200,
    );
    const { queryPlanner, executionStats } = res.body;
    expect(res.body.ok).toBe(1);
    expect(queryPlanner.namespace).toBe(`nmdc.${C}`);
    expect(queryPlanner.parsedQuery).toEqual(filter);
    expect(queryPlanner.collectionSize).toBe(N);
    // 40% of 5,000 by a random sample of about 2,000.
    expect(queryPlanner.estimate.source).toBe('sample');
    expect(queryPlanner.estimate.matches).toBeGreaterThan(1600);
    expect(queryPlanner.estimate.matches).toBeLessThan(2400);
    expect(queryPlanner.winningPlan).toMatchObject({
      stage: 'COLLSCAN',
      accessPath: 'id-walk',
      bodyTest: '="Toolik"',
    });
    const candidates = queryPlanner.rejectedPlans.find(
      (p: { accessPath: string }) => p.accessPath === 'candidate-ids',
    );
    expect(candidates.estimatedCostMillis).toBeGreaterThan(queryPlanner.winningPlan.estimatedCostMillis);
    expect(queryPlanner.summary).toMatch(/^biosample_set page 0\+25: id-walk/);
    // The limit's 25, from about 25 / 0.4 records read.
    expect(executionStats.nReturned).toBe(25);
    expect(executionStats.accessPath).toBe('id-walk');
    expect(executionStats.totalDocsExamined).toBeGreaterThanOrEqual(25);
    expect(executionStats.totalDocsExamined).toBeLessThan(200);
    expect(executionStats.totalDocsParsed).toBe(25);

    const found = await run({ find: C, filter, limit: 25 }).expect(200);
    expect(found.body.cursor.firstBatch).toHaveLength(25);
    expect(found.body.cursor.firstBatch[0].id).toBe('nmdc:bsm-11-x00000');
  });

  it('runs a find to its end with executionStats, as MongoDB does: every match, whatever the batch size', async () => {
    const filter = { 'geo_loc_name.has_raw_value': { $regex: 'Toolik' } };
    const matches = (await run({ count: C, query: filter }).expect(200)).body.n;
    expect(matches).toBe(2000);
    for (const inner of [
      { find: C, filter },
      { find: C, filter, batchSize: 4 },
      { find: C, filter, sort: { name: -1 } },
    ]) {
      const res = await run({ explain: inner, verbosity: 'executionStats' }).expect(200);
      const { queryPlanner, executionStats } = res.body;
      expect(queryPlanner).not.toHaveProperty('limit');
      expect(executionStats.nReturned, JSON.stringify(inner)).toBe(matches);
      expect(executionStats.totalDocsExamined, JSON.stringify(inner)).toBeGreaterThanOrEqual(matches);
    }
    // The batches of the find itself are the cursor's business.
    const found = await run({ find: C, filter, batchSize: 4 }).expect(200);
    expect(found.body.cursor.batch).toHaveLength(4);
  });

  it('reads candidate ids from the search index for a rare predicate', async () => {
    const filter = { name: { $regex: 'Quillayute' } };
    const res = await run({ explain: { find: C, filter }, verbosity: 'executionStats' }).expect(200);
    const { queryPlanner, executionStats } = res.body;
    expect(queryPlanner.winningPlan).toMatchObject({ stage: 'SEARCH_INDEX', accessPath: 'candidate-ids' });
    expect(queryPlanner.rejectedPlans.map((p: { accessPath: string }) => p.accessPath)).toContain('id-walk');
    expect(executionStats.nReturned).toBe(5);
    expect(executionStats.totalKeysExamined).toBeGreaterThanOrEqual(5);
    expect(executionStats.totalDocsExamined).toBeLessThan(20);
  });

  it('explains a count and runs it with executionStats', async () => {
    const query = { 'geo_loc_name.has_raw_value': { $regex: 'kellogg', $options: 'i' } };
    const res = await run({ explain: { count: C, query }, verbosity: 'executionStats' }).expect(200);
    expect(res.body.executionStats.count).toBe(3000);
    const counted = await run({ count: C, query }).expect(200);
    expect(counted.body.n).toBe(3000);
    const exact = await run({ explain: { count: C, query: { ecosystem_type: 'Soil' } } }).expect(200);
    expect(exact.body.queryPlanner.winningPlan).toMatchObject({
      accessPath: 'attribute-index',
      note: 'counted on the attribute index',
    });
    expect(exact.body.executionStats).toBeUndefined();
  });

  it('writes a debug log line with the plan summary for each query', async () => {
    logLines.length = 0;
    await run({ find: C, filter: { name: { $regex: 'Quillayute' } } }).expect(200);
    const lines = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'query plan');
    expect(lines).toHaveLength(1);
    expect(lines[0].plan).toMatch(/^biosample_set page 0\+102: candidate-ids/);
    expect(lines[0].returned).toBe(5);
  });

  it('refuses what it cannot explain with a 422 naming the problem', async () => {
    const agg = await run({ explain: { aggregate: C, pipeline: [] } }).expect(422);
    expect(agg.body.detail).toMatch(/explain must hold a find or count command/);
    const verbosity = await run({ explain: { find: C }, verbosity: 'allPlansExecution' }).expect(422);
    expect(verbosity.body.detail).toBe('verbosity must be queryPlanner or executionStats');
  });

  it('needs a bearer token', async () => {
    await request(t.app)
      .post('/queries:run')
      .send({ explain: { find: C } })
      .expect(401);
  });
});
