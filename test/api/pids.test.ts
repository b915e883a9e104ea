/**
 * `/pids` through the whole app (request and response validation against openapi.yaml included):
 * site clients of two sites mint, resolve, bind and delete identifiers; users and anonymous callers
 * are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { PIDS, idPatternOfClass } from '../../src/pids/index.ts';
import { SITE_CLIENTS_ONLY } from '../../src/pids/routes.ts';
import { createTestApp, type TestApp, passwordToken, newSiteClient } from '../support/server.ts';
import jsonSchema from '../../src/schema/vendor/nmdc-schema-11.23.0/nmdc.schema.json' with { type: 'json' };

setBcryptCost(4);

const ADMIN = { username: 'pid-root', password: 'Vq7-tundra-mosaic-41-pelican' };
const OWNER_A = { username: 'pid-owner-a', password: 'Kx2-granite-lantern-88-osprey' };
const OWNER_B = { username: 'pid-owner-b', password: 'Zr9-meadow-compass-17-heron' };

let t: TestApp;
/** Bearer headers: site A's client, site B's client, and site A's administrator (a user). */
let siteA: Record<string, string>;
let siteB: Record<string, string>;
let user: Record<string, string>;
let siteAClientId: string;

async function passwordLogin(username: string, password: string): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await passwordToken(t.app, username, password)}` };
}

/** A user who administers a new site, that site's client credentials, and the client's token. */
async function siteClientOf(owner: { username: string; password: string }, siteId: string) {
  const admin = await passwordLogin(ADMIN.username, ADMIN.password);
  expect((await request(t.app).post('/users').set(admin).send(owner)).status).toBe(201);
  const ownerAuth = await passwordLogin(owner.username, owner.password);
  return { ...(await newSiteClient(t.app, ownerAuth, siteId)), owner: ownerAuth };
}

const mint = (auth: Record<string, string>, body: unknown) =>
  request(t.app)
    .post('/pids/mint')
    .set(auth)
    .send(body as object);
const resolve = (auth: Record<string, string>, id: string) =>
  request(t.app).get(`/pids/resolve/${id}`).set(auth);
const bind = (auth: Record<string, string>, body: unknown) =>
  request(t.app)
    .post('/pids/bind')
    .set(auth)
    .send(body as object);
const del = (auth: Record<string, string>, body: unknown) =>
  request(t.app)
    .post('/pids/delete')
    .set(auth)
    .send(body as object);

async function mintOne(auth: Record<string, string>, schemaClass = 'nmdc:Biosample'): Promise<string> {
  const res = await mint(auth, { schema_class: { id: schemaClass }, how_many: 1 });
  expect(res.status, res.text).toBe(200);
  return res.body[0];
}

/** The JSON Schema's pattern for the class's id, and the class's own (typecode) pattern. */
function idPatterns(schemaClass: string): RegExp[] {
  const name = schemaClass.slice('nmdc:'.length);
  const defs = (
    jsonSchema as unknown as { $defs: Record<string, { properties: { id: { pattern: string } } }> }
  ).$defs;
  return [new RegExp(defs[name]!.properties.id.pattern), new RegExp(idPatternOfClass(name)!)];
}

const BIOSAMPLE_TYPECODE = { id: 'nmdc:Biosample_typecode', schema_class: 'nmdc:Biosample', name: 'bsm' };
const SHOULDER = { id: 'nmdc:minter_shoulder_11', assigned_to: 'nmdc:minter_service_11', name: '11' };

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const a = await siteClientOf(OWNER_A, 'pid-lab-a');
  const b = await siteClientOf(OWNER_B, 'pid-lab-b');
  siteA = a.client;
  siteAClientId = a.clientId;
  siteB = b.client;
  user = a.owner;
}, 30_000);
afterAll(async () => t?.close());

describe('POST /pids/mint', () => {
  it.each([
    ['nmdc:Biosample', 'bsm', 3, ''],
    ['nmdc:Study', 'sty', 2, ''],
    ['nmdc:DataObject', 'dobj', 1, ''],
    ['nmdc:NucleotideSequencing', 'dgns', 2, ''],
    ['nmdc:MassSpectrometry', 'dgms', 1, ''],
    ['nmdc:CollectingBiosamplesFromSite', 'clsite', 1, ''],
    // Workflow executions carry a version: the id a record uses is the minted one plus `.1`.
    ['nmdc:MetagenomeAssembly', 'wfmgas', 2, '.1'],
    ['nmdc:ReadQcAnalysis', 'wfrqc', 1, '.1'],
  ])(
    'mints %s ids with typecode %s that pass the schema id patterns',
    async (schemaClass, typecode, howMany, version) => {
      const res = await mint(siteA, { schema_class: { id: schemaClass }, how_many: howMany });
      expect(res.status, res.text).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toHaveLength(howMany);
      expect(new Set(res.body).size).toBe(howMany);
      for (const id of res.body as string[]) {
        expect(id).toMatch(new RegExp(`^nmdc:${typecode}-11-[0-9a-hjkmnp-tv-z]{6}[0-9]{2}$`));
        for (const pattern of idPatterns(schemaClass)) expect(`${id}${version}`).toMatch(pattern);
      }
    },
  );

  it("keeps each minted id as a draft of the minting site's client", async () => {
    const id = await mintOne(siteA);
    expect(await t.store.getById(PIDS, id)).toMatchObject({
      id,
      status: 'draft',
      site_id: 'pid-lab-a',
      client_id: siteAClientId,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  });

  it("uses the original's defaults: one id, of nmdc:Biosample", async () => {
    const oneDataObject = await mint(siteA, { schema_class: { id: 'nmdc:DataObject' } });
    expect(oneDataObject.status, oneDataObject.text).toBe(200);
    expect(oneDataObject.body).toEqual([expect.stringMatching(/^nmdc:dobj-11-/)]);
    const empty = await mint(siteA, {});
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body).toEqual([expect.stringMatching(/^nmdc:bsm-11-/)]);
  });

  it('answers 422 naming an unknown class or one without a typecode', async () => {
    const unknown = await mint(siteA, { schema_class: { id: 'nmdc:Biosampel' }, how_many: 1 });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({ detail: 'Unknown schema class nmdc:Biosampel' });
    const abstract = await mint(siteA, { schema_class: { id: 'nmdc:DataGeneration' }, how_many: 1 });
    expect(abstract.status).toBe(422);
    expect(abstract.body).toEqual({ detail: 'Cannot map schema class nmdc:DataGeneration to a typecode' });
    const term = await mint(siteA, { schema_class: { id: 'nmdc:OntologyClass' }, how_many: 1 });
    expect(term.status).toBe(422);
    expect(term.body).toEqual({ detail: 'Cannot map schema class nmdc:OntologyClass to a typecode' });
  });

  it('answers 422 for how_many below 1 or above 10000, or not an integer', async () => {
    for (const [howMany, rule] of [
      [0, 'must be >= 1'],
      [10_001, 'must be <= 10000'],
      [2.5, 'must be integer'],
      ['three', 'must be integer'],
    ] as const) {
      const res = await mint(siteA, { schema_class: { id: 'nmdc:Biosample' }, how_many: howMany });
      expect(res.status, String(howMany)).toBe(422);
      expect(res.body).toEqual({ detail: expect.stringContaining(`how_many ${rule}`) });
    }
  });

  it('mints 1000 ids in one request, all distinct and all stored', async () => {
    const res = await mint(siteB, { schema_class: { id: 'nmdc:DataObject' }, how_many: 1000 });
    expect(res.status, res.text.slice(0, 200)).toBe(200);
    expect(new Set(res.body).size).toBe(1000);
    expect(await t.store.count(PIDS, { id: { $in: res.body }, site_id: 'pid-lab-b' })).toBe(1000);
  }, 60_000);
});

describe('site clients only', () => {
  const calls: Array<[string, (auth: Record<string, string>) => request.Test]> = [
    ['POST /pids/mint', (auth) => mint(auth, { schema_class: { id: 'nmdc:Biosample' }, how_many: 1 })],
    ['GET /pids/resolve/{id_name}', (auth) => resolve(auth, 'nmdc:bsm-11-00016j82')],
    ['POST /pids/bind', (auth) => bind(auth, { id_name: 'nmdc:bsm-11-00016j82', metadata_record: {} })],
    ['POST /pids/delete', (auth) => del(auth, { id_name: 'nmdc:bsm-11-00016j82' })],
  ];

  it.each(calls)('%s answers 401 without a token', async (_name, call) => {
    const res = await call({});
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.body).toEqual({ detail: 'Access token is invalid or missing. Please log in again.' });
  });

  it.each(calls)("%s answers 403 to a user's token, even a site administrator's", async (_name, call) => {
    const res = await call(user);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: SITE_CLIENTS_ONLY });
  });

  it("POST /pids/mint answers 403 to a runtime administrator's user token too", async () => {
    const res = await mint(await passwordLogin(ADMIN.username, ADMIN.password), { how_many: 1 });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: SITE_CLIENTS_ONLY });
  });
});

describe('GET /pids/resolve/{id_name}', () => {
  it('answers the identifier, to the minting site and to any other site client', async () => {
    const id = await mintOne(siteA);
    const expected = {
      id,
      name: id,
      typecode: BIOSAMPLE_TYPECODE,
      shoulder: SHOULDER,
      status: 'draft',
      bindings: null,
    };
    for (const auth of [siteA, siteB]) {
      const res = await resolve(auth, id);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual(expected);
    }
  });

  it('answers 404 for an id never minted, and for a malformed one', async () => {
    for (const id of ['nmdc:bsm-11-00016j82', 'not-an-id']) {
      const res = await resolve(siteA, id);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: `ID ${id} is unknown` });
    }
  });
});

describe('POST /pids/bind', () => {
  it('binds a metadata record to a draft id, and a second bind replaces the first', async () => {
    const id = await mintOne(siteA);
    const first = await bind(siteA, {
      id_name: id,
      metadata_record: { name: 'Soil core 7', depth: { value: 5 } },
    });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({
      id,
      name: id,
      typecode: BIOSAMPLE_TYPECODE,
      shoulder: SHOULDER,
      status: 'draft',
      bindings: { name: 'Soil core 7', depth: { value: 5 } },
    });
    const second = await bind(siteA, { id_name: id, metadata_record: { foo: 'bar' } });
    expect(second.body.bindings).toEqual({ foo: 'bar' });
    expect((await resolve(siteB, id)).body.bindings).toEqual({ foo: 'bar' });
  });

  it("answers 403 to another site's client and leaves the binding as it was", async () => {
    const id = await mintOne(siteA);
    const res = await bind(siteB, { id_name: id, metadata_record: { taken: true } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      detail: `ID ${id} was minted by another site; only the site that minted an id can bind metadata to it`,
    });
    expect((await resolve(siteA, id)).body.bindings).toBeNull();
  });

  it('answers 404 for an unknown id and 422 without a metadata record', async () => {
    const unknown = await bind(siteA, { id_name: 'nmdc:bsm-11-00016j82', metadata_record: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'ID nmdc:bsm-11-00016j82 is unknown' });
    const missing = await bind(siteA, { id_name: await mintOne(siteA) });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toMatch(/metadata_record/);
  });
});

describe('POST /pids/delete', () => {
  it('deletes a draft id for the minting site (200, null); it then resolves to 404', async () => {
    const id = await mintOne(siteA, 'nmdc:Study');
    const res = await del(siteA, { id_name: id });
    expect(res.status, res.text).toBe(200);
    expect(res.text).toBe('null');
    const gone = await resolve(siteA, id);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `ID ${id} is unknown` });
    const again = await del(siteA, { id_name: id });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `ID ${id} is unknown` });
  });

  it("answers 403 to another site's client and keeps the id", async () => {
    const id = await mintOne(siteA);
    const res = await del(siteB, { id_name: id });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      detail: `ID ${id} was minted by another site; only the site that minted an id can delete it`,
    });
    expect((await resolve(siteA, id)).body.status).toBe('draft');
  });

  it('answers 403 for an id that is no longer a draft, and keeps it and its binding', async () => {
    const id = await mintOne(siteA);
    await bind(siteA, { id_name: id, metadata_record: { name: 'kept' } });
    const record = (await t.store.getById(PIDS, id))!;
    await t.store.upsertMany(PIDS, [{ ...record, status: 'registered' }]);
    const deleting = await del(siteA, { id_name: id });
    expect(deleting.status).toBe(403);
    expect(deleting.body).toEqual({ detail: "Status not 'draft'. Can't delete." });
    const binding = await bind(siteA, { id_name: id, metadata_record: { name: 'changed' } });
    expect(binding.status).toBe(403);
    expect(binding.body).toEqual({ detail: "Status not 'draft'. Can't change bound metadata" });
    expect((await resolve(siteA, id)).body).toMatchObject({
      status: 'registered',
      bindings: { name: 'kept' },
    });
  });

  it('registers a draft id once a record with it is stored, after which it cannot be bound or deleted', async () => {
    const id = await mintOne(siteA);
    expect((await resolve(siteB, id)).body.status).toBe('draft');
    // Stored by any path (a submission, a changesheet, npm run load): here straight into the store.
    await t.store.upsertMany('biosample_set', [{ id, type: 'nmdc:Biosample', name: 'Uses a minted id' }]);
    expect((await resolve(siteB, id)).body).toEqual({
      id,
      name: id,
      typecode: BIOSAMPLE_TYPECODE,
      shoulder: SHOULDER,
      status: 'registered',
      bindings: null,
    });
    expect(await t.store.getById(PIDS, id)).toMatchObject({ status: 'registered', registered_by_record: id });
    expect((await bind(siteA, { id_name: id, metadata_record: { name: 'x' } })).body).toEqual({
      detail: "Status not 'draft'. Can't change bound metadata",
    });
    expect((await del(siteA, { id_name: id })).status).toBe(403);
  });

  it("registers a workflow execution's id when its versioned record (<id>.1) is stored", async () => {
    const id = await mintOne(siteA, 'nmdc:MetagenomeAssembly');
    await t.store.upsertMany('workflow_execution_set', [
      { id: `nmdc:${id.slice(5)}x.1`, type: 'nmdc:MetagenomeAssembly' }, // another id that only starts alike
    ]);
    expect((await resolve(siteA, id)).body.status).toBe('draft');
    await t.store.upsertMany('workflow_execution_set', [{ id: `${id}.1`, type: 'nmdc:MetagenomeAssembly' }]);
    expect((await resolve(siteA, id)).body.status).toBe('registered');
    expect(await t.store.getById(PIDS, id)).toMatchObject({ registered_by_record: `${id}.1` });
  });

  it('answers 404 for an unknown id and 422 without id_name', async () => {
    const unknown = await del(siteA, { id_name: 'nmdc:sty-11-00016j82' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'ID nmdc:sty-11-00016j82 is unknown' });
    const missing = await del(siteA, {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toMatch(/id_name/);
  });
});
