/**
 * The service on the MongoDB stand-in (a replica set in process, test/support/mongo-standin.ts):
 * transient engine errors (an election, a step-down, a write conflict that outlasts the retries,
 * a time limit) answer 503 with Retry-After and a detail without the engine's internals, and the
 * same requests succeed once the engine answers again.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, StandInServer } from '../support/mongo-standin.ts';
import { standInApp, type StandInApp } from '../support/mongo-standin-app.ts';
import type { TestApp } from '../support/server.ts';

const STUDY = 'nmdc:sty-11-trans01';
const server = new StandInServer();
const env = { MONGO_URL: 'mongodb://db1,db2,db3/?replicaSet=rs0', MONGO_MAX_TIME_MS: '200' };
let standIn: StandInApp;
let t: TestApp;

beforeAll(async () => {
  // No catch-up loops: the fail points below are meant for the requests' operations.
  standIn = await standInApp(server, env, (store) =>
    store.upsertMany('study_set', [{ id: STUDY, type: 'nmdc:Study', name: 'Transient study' }]),
  );
  t = standIn.app;
}, 60_000);

afterAll(async () => {
  await standIn?.close();
});

describe('transient MongoDB errors over HTTP', () => {
  it('answers an election with 503, Retry-After and a plain detail, then 200 once a primary answers', async () => {
    const ok = await request(t.app).get(`/studies/${STUDY}`).expect(200);
    expect(ok.body.name).toBe('Transient study');
    server.failNext({ ops: ['find', 'findOne'], collection: 'study_set', error: ERRORS.NotWritablePrimary });
    const res = await request(t.app).get(`/studies/${STUDY}`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body.detail).toMatch(/electing a new primary/);
    expect(JSON.stringify(res.body)).not.toMatch(/NotWritablePrimary|10107/);
    await request(t.app).get(`/studies/${STUDY}`).expect(200);
  });

  it('answers a query that outruns its time limit with 503 and Retry-After', async () => {
    server.failNext({ ops: ['find'], collection: 'study_set', delayMs: 2000 });
    const started = Date.now();
    const res = await request(t.app).get('/studies').query({ filter: 'name:Transient study' });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body.detail).toMatch(/time limit/);
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
