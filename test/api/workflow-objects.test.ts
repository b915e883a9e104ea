/**
 * The objects endpoints (GA4GH DRS) through the whole app, request and response validation
 * included: sites register, list, read and change their objects; the service's own stored objects
 * (a submitted metadata JSON) are downloadable through their access method with a matching sha256;
 * setting an object's types fires the catalog's triggers once per trigger and object; metadata
 * record ids are redirected; and the 401/403/404/409/422 refusals say what was wrong.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { createTestApp, type TestApp, passwordToken, newSiteClient } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'root', password: 'drs-root-password-5521' };
const USER = { username: 'reader', password: 'drs reader tidal flats 7301' };

/** An administrator's catalog: a type with two triggers, and a type no trigger names. */
const CATALOG = {
  capabilities: [{ id: 'objtest-cap', name: 'Runs the objtest workflows' }],
  workflows: [
    {
      id: 'objtest-wf',
      name: 'Objtest workflow',
      description: 'Runs on objtest reads',
      capability_ids: ['objtest-cap'],
    },
    { id: 'objtest-wf2', name: 'Second objtest workflow', capability_ids: [] },
  ],
  object_types: [
    { id: 'objtest-reads', name: 'Objtest reads', description: 'Reads that start two workflows' },
    { id: 'objtest-quiet', name: 'Objtest quiet', description: 'No trigger names it' },
  ],
  triggers: [
    { object_type_id: 'objtest-reads', workflow_id: 'objtest-wf' },
    { object_type_id: 'objtest-reads', workflow_id: 'objtest-wf2' },
  ],
};

const sha = () => randomBytes(32).toString('hex');
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A blob body as a site sends it. */
const blob = (overrides: Record<string, unknown> = {}) => ({
  name: 'contigs.fna',
  description: 'Assembled contigs',
  mime_type: 'text/plain',
  size: 81244,
  created_time: '2025-06-02T14:03:11',
  checksums: [{ type: 'sha256', checksum: sha() }],
  access_methods: [{ type: 'https', access_url: { url: 'https://data.example.org/contigs.fna' } }],
  ...overrides,
});

describe('objects (GA4GH DRS)', () => {
  let t: TestApp;
  let admin: string;
  let user: string;
  let siteA: string;
  let siteB: string;
  let drsHost: string;
  let catalogDir: string;

  async function siteClient(siteId: string): Promise<string> {
    const { client } = await newSiteClient(t.app, bearer(admin), siteId);
    return client.Authorization.slice('Bearer '.length);
  }

  const create = async (token: string, body: Record<string, unknown> = blob()) => {
    const res = await request(t.app).post('/objects').set(bearer(token)).send(body);
    expect(res.status, res.text).toBe(201);
    return res.body as Record<string, any>;
  };
  const setTypes = (token: string, id: string, types: string[]) =>
    request(t.app).put(`/objects/${id}/types`).set(bearer(token)).send(types);
  const jobsOf = (objectId: string) => t.store.find('jobs', { 'config.object_id': objectId });

  beforeAll(async () => {
    catalogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-drs-catalog-'));
    const catalog = path.join(catalogDir, 'catalog.json');
    fs.writeFileSync(catalog, JSON.stringify(CATALOG));
    t = await createTestApp({
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      WORKFLOW_CATALOG: catalog,
    });
    drsHost = new URL(t.config.publicUrl).host;
    admin = await passwordToken(t.app, ADMIN.username, ADMIN.password);
    expect((await request(t.app).post('/users').set(bearer(admin)).send(USER)).status).toBe(201);
    user = await passwordToken(t.app, USER.username, USER.password);
    siteA = await siteClient('drs-lab-a');
    siteB = await siteClient('drs-lab-b');
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(catalogDir, { recursive: true, force: true });
  });

  describe('POST /objects', () => {
    it('registers a blob: minted sys0 id, self_uri on the public host, times in UTC; readable at both paths', async () => {
      const body = blob();
      const object = await create(siteA, body);
      expect(object).toEqual({
        id: expect.stringMatching(/^sys0[0-9a-hjkmnp-tv-z]{12}$/),
        name: 'contigs.fna',
        self_uri: `drs://${drsHost}/${object.id}`,
        size: 81244,
        created_time: '2025-06-02T14:03:11.000Z',
        mime_type: 'text/plain',
        checksums: body.checksums,
        access_methods: body.access_methods,
        description: 'Assembled contigs',
      });
      const read = await request(t.app).get(`/objects/${object.id}`);
      expect(read.status, read.text).toBe(200);
      expect(read.body).toEqual(object);
      const drs = await request(t.app).get(`/ga4gh/drs/v1/objects/${object.id}`);
      expect(drs.status, drs.text).toBe(200);
      expect(drs.body).toEqual(object);
      // The managing site stays inside the store.
      expect((await t.store.getById('objects', object.id))!._mgr_site).toBe('drs-lab-a');
    });

    it('registers a bundle without access methods, created_time defaulting to now', async () => {
      const before = Date.now();
      const object = await create(siteA, {
        name: 'assembly',
        size: 0,
        checksums: [{ type: 'md5', checksum: sha().slice(0, 32) }],
        contents: [
          { name: 'contigs.fna', id: 'sys0aaaaaaaaaaaa' },
          { name: 'bins', contents: [] },
        ],
      });
      expect(object.contents).toEqual([
        { name: 'contigs.fna', id: 'sys0aaaaaaaaaaaa' },
        { name: 'bins', contents: [] },
      ]);
      expect(object.access_methods).toBeUndefined();
      expect(Date.parse(object.created_time)).toBeGreaterThanOrEqual(before - 1000);
    });

    it('401 without a token, 403 for a user, and nothing stored', async () => {
      const body = blob();
      const anonymous = await request(t.app).post('/objects').send(body);
      expect(anonymous.status).toBe(401);
      const byUser = await request(t.app).post('/objects').set(bearer(user)).send(body);
      expect(byUser.status).toBe(403);
      expect(byUser.body.detail).toMatch(/site client/i);
      const stored = await t.store.find('objects', {
        'checksums.checksum': body.checksums[0]!.checksum,
      });
      expect(stored).toEqual([]);
    });

    it('422 for missing or empty checksums, an unknown checksum type, a negative size, a bad access method, a blob without access methods', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [blob({ checksums: undefined }), /checksums/],
        [blob({ checksums: [] }), /checksums/],
        [blob({ checksums: [{ type: 'crc99', checksum: 'abc' }] }), /checksums.*type|type/],
        [blob({ size: -1 }), /size/],
        [
          blob({ access_methods: [{ type: 'https' }] }),
          /access_methods\.0: at least one of access_url and access_id/,
        ],
        [
          blob({ access_methods: undefined }),
          /no contents means a single blob, which requires access_methods/,
        ],
        [blob({ created_time: 'yesterday' }), /created_time is not an ISO 8601 date-time/],
      ];
      for (const [body, detail] of cases) {
        const res = await request(t.app).post('/objects').set(bearer(siteA)).send(body);
        expect(res.status, JSON.stringify(body)).toBe(422);
        expect(JSON.stringify(res.body.detail)).toMatch(detail);
      }
    });

    it('409 when another object has the same checksum, from either site', async () => {
      const first = await create(siteA);
      for (const token of [siteA, siteB]) {
        const again = await request(t.app)
          .post('/objects')
          .set(bearer(token))
          .send(blob({ checksums: [first.checksums[0], { type: 'md5', checksum: sha().slice(0, 32) }] }));
        expect(again.status).toBe(409);
        expect(again.body.detail).toBe(
          `provided checksum matches existing object ${first.id}: sha256:${first.checksums[0].checksum}`,
        );
      }
    });
  });

  describe('GET /objects', () => {
    it('lists with a filter, pages with tokens and projects', async () => {
      const word = `batch${randomBytes(4).toString('hex')}`;
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await create(siteA, blob({ description: word })));
      const ids = made.map((o) => o.id).sort();
      const filter = JSON.stringify({ description: word });

      const first = await request(t.app).get('/objects').query({ filter, max_page_size: 2 });
      expect(first.status, first.text).toBe(200);
      expect(first.body.resources.map((o: { id: string }) => o.id)).toEqual(ids.slice(0, 2));
      expect(first.body.resources[0]).toEqual(made.find((o) => o.id === ids[0]));
      expect(first.body.next_page_token).toEqual(expect.any(String));
      const second = await request(t.app)
        .get('/objects')
        .query({ max_page_size: 2, page_token: first.body.next_page_token });
      expect(second.status, second.text).toBe(200);
      expect(second.body).toEqual({ resources: [made.find((o) => o.id === ids[2])] });

      const projected = await request(t.app).get('/objects').query({ filter, projection: 'size,name' });
      expect(projected.status, projected.text).toBe(200);
      expect(projected.body).toEqual({
        resources: ids.map((id) => ({ id, name: 'contigs.fna', size: 81244 })),
      });
    });

    it('400/422 for a filter that is not JSON or uses an operator outside the guard', async () => {
      const notJson = await request(t.app).get('/objects').query({ filter: '{description:' });
      expect([400, 422]).toContain(notJson.status);
      expect(notJson.body.detail).toEqual(expect.any(String));
      const badToken = await request(t.app).get('/objects').query({ page_token: 'nope' });
      expect(badToken.status).toBe(400);
      expect(badToken.body).toEqual({ detail: '`page_token` not found' });
    });
  });

  describe('GET /objects/{object_id} and the DRS path', () => {
    it('404 naming the id; the DRS path answers the DRS error shape', async () => {
      const res = await request(t.app).get('/objects/sys0nothere00000');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Object sys0nothere00000 not found' });
      const drs = await request(t.app).get('/ga4gh/drs/v1/objects/sys0nothere00000');
      expect(drs.status).toBe(404);
      expect(drs.body).toEqual({ msg: 'Object sys0nothere00000 not found', status_code: 404 });
    });

    it('redirects `nmdc` to the schema documentation', async () => {
      const res = await request(t.app).get('/objects/nmdc');
      expect(res.status).toBe(307);
      expect(res.headers.location).toBe('https://microbiomedata.github.io/nmdc-schema');
    });
  });

  describe('PATCH /objects/{object_id}', () => {
    it('the managing site changes fields; updated_time becomes now; null removes a field', async () => {
      const object = await create(siteA);
      const before = Date.now();
      const res = await request(t.app).patch(`/objects/${object.id}`).set(bearer(siteA)).send({
        created_time: '2025-07-01T08:00:00+02:00',
        description: 'Re-run',
        mime_type: null,
        id: 'ignored',
      });
      expect(res.status, res.text).toBe(200);
      const { updated_time, ...rest } = res.body;
      const { mime_type: _dropped, ...kept } = object;
      expect(rest).toEqual({ ...kept, created_time: '2025-07-01T06:00:00.000Z', description: 'Re-run' });
      expect(Date.parse(updated_time)).toBeGreaterThanOrEqual(before - 1000);
      expect((await request(t.app).get(`/objects/${object.id}`)).body).toEqual(res.body);
    });

    it('403 for another site (naming the managing site) and for a user; 404 for an unknown object', async () => {
      const object = await create(siteA);
      const other = await request(t.app)
        .patch(`/objects/${object.id}`)
        .set(bearer(siteB))
        .send({ description: 'x' });
      expect(other.status).toBe(403);
      expect(other.body).toEqual({ detail: 'client authorized for different site_id than drs-lab-a' });
      const byUser = await request(t.app)
        .patch(`/objects/${object.id}`)
        .set(bearer(admin))
        .send({ description: 'x' });
      expect(byUser.status).toBe(403);
      expect((await request(t.app).get(`/objects/${object.id}`)).body).toEqual(object);
      const unknown = await request(t.app)
        .patch('/objects/sys0nothere00000')
        .set(bearer(siteA))
        .send({ size: 1 });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ detail: 'Object sys0nothere00000 not found' });
      const removing = await request(t.app)
        .patch(`/objects/${object.id}`)
        .set(bearer(siteA))
        .send({ created_time: null, description: 'x' });
      expect(removing.status).toBe(422);
      expect(removing.body).toEqual({ detail: 'created_time cannot be removed from an object' });
      expect((await request(t.app).get(`/objects/${object.id}`)).body).toEqual(object);
    });

    it("409 when a new checksum is another object's; a checksum given up is free again", async () => {
      const first = await create(siteA);
      const second = await create(siteA);
      const taken = await request(t.app)
        .patch(`/objects/${second.id}`)
        .set(bearer(siteA))
        .send({ checksums: first.checksums });
      expect(taken.status).toBe(409);
      expect(taken.body.detail).toMatch(new RegExp(`existing object ${first.id}`));
      const replaced = { type: 'sha256', checksum: sha() };
      const moved = await request(t.app)
        .patch(`/objects/${first.id}`)
        .set(bearer(siteA))
        .send({ checksums: [replaced] });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.checksums).toEqual([replaced]);
      const reused = await create(siteB, blob({ checksums: first.checksums }));
      expect(reused.checksums).toEqual(first.checksums);
    });
  });

  describe('object types and triggers', () => {
    it('GET/PUT types: the object type records; 422 naming unknown types; 403 for another site or a plain user; 404', async () => {
      const object = await create(siteA);
      const none = await request(t.app).get(`/objects/${object.id}/types`);
      expect(none.status, none.text).toBe(200);
      expect(none.body).toEqual([]);

      const unknown = await setTypes(siteA, object.id, ['objtest-quiet', 'no-such-type', 'nor-this']);
      expect(unknown.status).toBe(422);
      expect(unknown.body).toEqual({ detail: 'unknown object type ids: no-such-type, nor-this' });

      for (const token of [siteB, user]) {
        const refused = await setTypes(token, object.id, ['objtest-quiet']);
        expect(refused.status).toBe(403);
        expect(refused.body.detail).toMatch(
          /site managing object .* \(drs-lab-a\) or a runtime administrator/,
        );
      }
      const anonymous = await request(t.app).put(`/objects/${object.id}/types`).send(['objtest-quiet']);
      expect(anonymous.status).toBe(401);

      const set = await setTypes(siteA, object.id, ['objtest-quiet']);
      expect(set.status, set.text).toBe(200);
      expect(set.body).toEqual({ ...object, types: ['objtest-quiet'] });
      const types = await request(t.app).get(`/objects/${object.id}/types`);
      expect(types.body).toEqual([
        {
          id: 'objtest-quiet',
          name: 'Objtest quiet',
          description: 'No trigger names it',
          created_at: expect.any(String),
        },
      ]);
      // A runtime administrator may set the types of any object.
      const byAdmin = await setTypes(admin, object.id, []);
      expect(byAdmin.status, byAdmin.text).toBe(200);
      expect(byAdmin.body.types).toEqual([]);

      expect((await setTypes(siteA, 'sys0nothere00000', ['objtest-quiet'])).body).toEqual({
        detail: 'Object sys0nothere00000 not found',
      });
      expect((await request(t.app).get('/objects/sys0nothere00000/types')).status).toBe(404);
    });

    it('a type no trigger names creates no job', async () => {
      const object = await create(siteA);
      expect((await setTypes(siteA, object.id, ['objtest-quiet'])).status).toBe(200);
      expect(await jobsOf(object.id)).toEqual([]);
      expect(await t.store.find('trigger_firings', { object_id: object.id })).toEqual([]);
    });

    it('gaining a triggered type creates one job per trigger, once however often the types are set', async () => {
      const object = await create(siteA);
      const first = await setTypes(siteA, object.id, ['objtest-reads']);
      expect(first.status, first.text).toBe(200);
      expect(first.body.types).toEqual(['objtest-reads']);

      const jobs = await jobsOf(object.id);
      expect(jobs.map((j) => (j.workflow as { id: string }).id).sort()).toEqual([
        'objtest-wf',
        'objtest-wf2',
      ]);
      const job = jobs.find((j) => (j.workflow as { id: string }).id === 'objtest-wf')!;
      expect(job).toEqual({
        id: expect.stringMatching(/^nmdc:sys0\w{12}$/),
        workflow: {
          id: 'objtest-wf',
          name: 'Objtest workflow',
          description: 'Runs on objtest reads',
          capability_ids: ['objtest-cap'],
        },
        config: { object_id: object.id },
        claims: [],
        created_at: expect.any(String),
      });
      // The job as the jobs endpoint answers it.
      const read = await request(t.app).get(`/jobs/${job.id}`);
      expect(read.status, read.text).toBe(200);
      expect(read.body).toEqual(job);

      // Setting the types again, dropping and regaining the type: still one job per trigger.
      expect((await setTypes(siteA, object.id, ['objtest-reads', 'objtest-quiet'])).status).toBe(200);
      expect((await setTypes(siteA, object.id, [])).status).toBe(200);
      expect((await setTypes(siteA, object.id, ['objtest-reads'])).status).toBe(200);
      expect((await jobsOf(object.id)).map((j) => j.id).sort()).toEqual(jobs.map((j) => j.id).sort());

      const firings = await t.store.find('trigger_firings', { object_id: object.id });
      expect(firings.map((f) => [f.id, f.status, f.job_id]).sort()).toEqual(
        [
          [`objtest-reads--objtest-wf|${object.id}`, 'done', job.id],
          [
            `objtest-reads--objtest-wf2|${object.id}`,
            'done',
            jobs.find((j) => (j.workflow as { id: string }).id === 'objtest-wf2')!.id,
          ],
        ].sort(),
      );
    });
  });

  describe("the service's own stored objects", () => {
    it('a submitted metadata JSON is downloadable through its DRS access method, its sha256 matching', async () => {
      const [studyId] = (
        await request(t.app)
          .post('/pids/mint')
          .set(bearer(siteA))
          .send({ schema_class: { id: 'nmdc:Study' }, how_many: 1 })
      ).body as string[];
      const payload = {
        study_set: [
          { id: studyId!, type: 'nmdc:Study', name: 'Tidal flats', study_category: 'research_study' },
        ],
      };
      const submitted = await request(t.app).post('/metadata/json:submit').set(bearer(admin)).send(payload);
      expect(submitted.status, submitted.text).toBe(200);
      const run = await request(t.app).get(`/runs/${submitted.body.detail.run_id}`).set(bearer(admin));
      const objectId = run.body.object_id as string;

      const object = await request(t.app).get(`/ga4gh/drs/v1/objects/${objectId}`);
      expect(object.status, object.text).toBe(200);
      expect(object.body).toEqual({
        id: objectId,
        name: expect.any(String),
        self_uri: `drs://${drsHost}/${objectId}`,
        size: expect.any(Number),
        created_time: expect.any(String),
        mime_type: 'application/json',
        checksums: [{ type: 'sha256', checksum: expect.stringMatching(/^[0-9a-f]{64}$/) }],
        access_methods: [{ type: 'https', access_id: objectId }],
        description: expect.any(String),
      });
      expect((await request(t.app).get(`/objects/${objectId}`)).body).toEqual(object.body);

      const access = await request(t.app).get(`/objects/${objectId}/access/${objectId}`);
      expect(access.status, access.text).toBe(200);
      expect(access.body).toEqual({ url: `${t.config.publicUrl}/objects/${objectId}/content` });
      const content = await request(t.app)
        .get(new URL(access.body.url).pathname)
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(content.status).toBe(200);
      expect(content.headers['content-type']).toMatch(/^application\/json/);
      const bytes = content.body as Buffer;
      expect(bytes.length).toBe(object.body.size);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(object.body.checksums[0].checksum);
      expect(JSON.parse(bytes.toString('utf8'))).toEqual(payload);

      // No site manages it, so no site changes it.
      const patch = await request(t.app)
        .patch(`/objects/${objectId}`)
        .set(bearer(siteA))
        .send({ description: 'x' });
      expect(patch.status).toBe(403);
      expect(patch.body).toEqual({ detail: 'client authorized for different site_id than nmdc-runtime' });

      // Its study's id is a metadata record: `GET /objects/<id without nmdc:>` redirects to it.
      for (const asked of [studyId!.slice('nmdc:'.length), studyId!]) {
        const redirected = await request(t.app).get(`/objects/${asked}`);
        expect(redirected.status).toBe(307);
        expect(redirected.headers.location).toBe(`${t.config.publicUrl}/nmdcschema/ids/${studyId}`);
      }
    });

    it('access: 404 for an unknown object, an access id the object does not name, or a site object without a handler; content of a site object is 404', async () => {
      const object = await create(
        siteA,
        blob({ access_methods: [{ type: 's3', access_id: 'drs-lab-a:reads' }] }),
      );
      const cases: Array<[string, string]> = [
        ['/objects/sys0nothere00000/access/x', 'Object sys0nothere00000 not found'],
        [`/objects/${object.id}/access/other`, `access_id other not referenced by object ${object.id}`],
        [
          `/objects/${object.id}/access/drs-lab-a:reads`,
          `no site found to handle access_id drs-lab-a:reads for object ${object.id}`,
        ],
        [
          `/objects/${object.id}/content`,
          `Object ${object.id} is registered by site drs-lab-a; its bytes are not kept here`,
        ],
      ];
      for (const [url, detail] of cases) {
        const res = await request(t.app).get(url);
        expect(res.status, url).toBe(404);
        expect(res.body).toEqual({ detail });
      }
    });

    it('a metadata-looking id with no record is 404', async () => {
      const res = await request(t.app).get('/objects/sty-11-zzzzzz99');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Object sty-11-zzzzzz99 not found' });
    });
  });
});
