/**
 * Never stale: a record written through `POST /queries:run` or by the loader is in the very next
 * provenance answer, and a deleted one is gone from it.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import { loadRecords } from '../../src/data/loader.ts';

let t: TestApp;
let adminToken: string;

const S = 'nmdc:sty-11-fresh';
const S2 = 'nmdc:sty-11-other';
const B = 'nmdc:bsm-11-fresh';

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: 'graph-admin', ADMIN_PASSWORD: 'graph admin password' });
  const term = (id: string) => ({
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id, type: 'nmdc:OntologyClass' },
  });
  await t.store.upsertMany('study_set', [
    { id: S, type: 'nmdc:Study', name: 'Fresh study', study_category: 'research_study' },
    { id: S2, type: 'nmdc:Study', name: 'Another study', study_category: 'research_study' },
  ]);
  // Valid records of the schema, as updates through /queries:run are validated against it.
  await t.store.upsertMany('biosample_set', [
    {
      id: B,
      type: 'nmdc:Biosample',
      name: 'not of the fresh study yet',
      associated_studies: [S2],
      env_broad_scale: term('ENVO:00000446'),
      env_local_scale: term('ENVO:00000114'),
      env_medium: term('ENVO:00001998'),
    },
  ]);
  const res = await request(t.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username: 'graph-admin', password: 'graph admin password' })
    .expect(200);
  adminToken = res.body.access_token;
});
afterAll(async () => t?.close());

const linked = async (query: string) =>
  (await request(t.app).get(`/nmdcschema/linked_instances?${query}`).expect(200)).body.resources.map(
    (r: { id: string }) => r.id,
  );
const run = (body: object, query = '') =>
  request(t.app)
    .post(`/queries:run${query}`)
    .set('Authorization', `Bearer ${adminToken}`)
    .send(body)
    .expect(200);

describe('provenance answers after writes', () => {
  it('follow an update and a delete made through /queries:run', async () => {
    expect(await linked(`ids=${S}&types=nmdc:Biosample`)).toEqual([]);
    await run({
      update: 'biosample_set',
      updates: [{ q: { id: B }, u: { $set: { associated_studies: [S] } } }],
    });
    expect(await linked(`ids=${S}&types=nmdc:Biosample`)).toEqual([B]);
    await run({
      update: 'biosample_set',
      updates: [{ q: { id: B }, u: { $set: { associated_studies: [S2] } } }],
    });
    expect(await linked(`ids=${S}&types=nmdc:Biosample`)).toEqual([]);
  });

  it('follow records the loader writes', async () => {
    const G = 'nmdc:dgns-11-fresh';
    const O = 'nmdc:dobj-11-fresh';
    const input = Readable.from([
      JSON.stringify({
        data_generation_set: [{ id: G, type: 'nmdc:NucleotideSequencing', has_input: [B], has_output: [O] }],
        data_object_set: [{ id: O, type: 'nmdc:DataObject', name: 'reads.fastq.gz' }],
      }),
    ]);
    await loadRecords({
      store: t.store,
      searchIndex: t.searchIndex,
      edgeIndex: t.edgeIndex,
      input,
      format: { kind: 'database' },
      validate: false,
    });
    expect(await linked(`ids=${B}&types=nmdc:DataObject`)).toEqual([O]);
    // The data generation still names it among its outputs: a broken reference, allowed here.
    await run(
      { delete: 'data_object_set', deletes: [{ q: { id: O }, limit: 1 }] },
      '?allow_broken_refs=true',
    );
    expect(await linked(`ids=${B}&types=nmdc:DataObject`)).toEqual([]);
    expect(await linked(`ids=${B}&types=nmdc:PlannedProcess`)).toEqual([G]);
  });
});
