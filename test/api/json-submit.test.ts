/**
 * `POST /metadata/json:submit` and `GET /runs/{run_id}` through the whole app: a site client
 * mints ids, a curator holding the allowance submits records using them, and the records are then
 * found by id, by `.search` and through the provenance graph; resubmission replaces by id; the
 * run tells counts and timings; refusals (no token, no allowance, invalid payload, too large)
 * leave the store as it was.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { MetadataValidator } from '../../src/validation/index.ts';
import { RecordWriter } from '../../search/writer.ts';
import { createTestApp, type TestApp, passwordToken } from '../support/server.ts';
import { SUBMIT_FORBIDDEN as SUBMIT_FORBIDDEN_TEXT, submissionsOf } from '../../src/submission/routes.ts';
import { IN_TURNS_FROM_BYTES } from '../../src/http/request-reading/json-in-turns.ts';

setBcryptCost(4);

const ADMIN = { username: 'root', password: 'marsh-root-password-4411' };
const CURATOR = { username: 'curator', password: 'curator tidal cores 8812' };
const PLAIN = { username: 'plain', password: 'plain estuary reader 3309' };

/** A word no other record holds, so `.search` finds exactly this test's records. */
const uniqueWord = () => `marsh${randomBytes(4).toString('hex')}`;

const biosample = (id: string, studyId: string, name: string) => ({
  id,
  type: 'nmdc:Biosample',
  name,
  associated_studies: [studyId],
  env_broad_scale: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00000446', name: 'terrestrial biome', type: 'nmdc:OntologyClass' },
  },
  env_local_scale: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00000114', name: 'agricultural field', type: 'nmdc:OntologyClass' },
  },
  env_medium: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00001998', name: 'soil', type: 'nmdc:OntologyClass' },
  },
});

describe('POST /metadata/json:submit', () => {
  let t: TestApp;
  let admin: string;
  let curator: string;
  let plain: string;
  let siteClient: string;

  const login = (who: { username: string; password: string }) =>
    passwordToken(t.app, who.username, who.password);
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  const mint = async (schemaClass: string, howMany: number): Promise<string[]> => {
    const res = await request(t.app)
      .post('/pids/mint')
      .set(bearer(siteClient))
      .send({ schema_class: { id: schemaClass }, how_many: howMany });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toHaveLength(howMany);
    return res.body as string[];
  };

  /** A study, biosamples of it named with `word`, and a data object, under freshly minted ids. */
  const submission = async (word: string, biosamples = 3) => {
    const [studyId] = await mint('nmdc:Study', 1);
    const biosampleIds = await mint('nmdc:Biosample', biosamples);
    const [dataObjectId] = await mint('nmdc:DataObject', 1);
    const payload = {
      study_set: [
        { id: studyId!, type: 'nmdc:Study', name: `Study of ${word}`, study_category: 'research_study' },
      ],
      biosample_set: biosampleIds.map((id, i) => biosample(id, studyId!, `Core ${i} ${word}`)),
      data_object_set: [
        {
          id: dataObjectId!,
          type: 'nmdc:DataObject',
          name: 'reads.fastq.gz',
          description: `Raw reads of ${word}`,
          data_category: 'instrument_data',
          data_object_type: 'Metagenome Raw Reads',
        },
      ],
    };
    return { payload, studyId: studyId!, biosampleIds, dataObjectId: dataObjectId! };
  };

  const submit = (token: string | undefined, payload: unknown) => {
    const req = request(t.app).post('/metadata/json:submit');
    if (token) req.set(bearer(token));
    return req.send(payload as object);
  };

  const searchBiosamples = async (word: string) => {
    const res = await request(t.app)
      .get('/biosamples')
      .query({ filter: `name.search:${word}`, per_page: 100 });
    expect(res.status, res.text).toBe(200);
    return res.body as { meta: { count: number }; results: Array<{ id: string; name: string }> };
  };

  beforeAll(async () => {
    t = await createTestApp({
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      // Room for bodies read in turns (over IN_TURNS_FROM_BYTES), whose records are staged as they come.
      MAX_BODY_BYTES: String(4 * 1024 * 1024),
    });
    admin = await login(ADMIN);
    for (const user of [CURATOR, PLAIN]) {
      const created = await request(t.app).post('/users').set(bearer(admin)).send(user);
      expect(created.status, created.text).toBe(201);
    }
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set(bearer(admin))
      .send({ username: CURATOR.username, action: '/metadata/json:submit' });
    expect(granted.status, granted.text).toBe(201);
    curator = await login(CURATOR);
    plain = await login(PLAIN);

    expect((await request(t.app).post('/sites').set(bearer(admin)).send({ id: 'marsh-lab' })).status).toBe(
      201,
    );
    const credentials = await request(t.app).post('/sites/marsh-lab:generateCredentials').set(bearer(admin));
    expect(credentials.status, credentials.text).toBe(200);
    const clientLogin = await request(t.app)
      .post('/token')
      .type('form')
      .send({ grant_type: 'client_credentials', ...credentials.body });
    expect(clientLogin.status, clientLogin.text).toBe(200);
    siteClient = clientLogin.body.access_token;
  });
  afterAll(async () => t?.close());

  it('applies records with minted ids: found by id, by .search and through linked_instances; the run tells counts', async () => {
    const word = uniqueWord();
    const { payload, studyId, biosampleIds, dataObjectId } = await submission(word);

    const res = await submit(curator, payload);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      type: 'success',
      detail: { run_id: expect.stringMatching(/^nmdc:sys0\w+$/) },
    });
    const runId = res.body.detail.run_id as string;

    const byId = await request(t.app).get(`/nmdcschema/ids/${biosampleIds[1]}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(payload.biosample_set[1]);
    const dataObject = await request(t.app).get(`/nmdcschema/ids/${dataObjectId}`);
    expect(dataObject.body).toEqual(payload.data_object_set[0]);

    const found = await searchBiosamples(word);
    expect(found.meta.count).toBe(3);
    expect(found.results.map((r) => r.id).sort()).toEqual([...biosampleIds].sort());

    const linked = await request(t.app)
      .get('/nmdcschema/linked_instances')
      .query({ ids: studyId, hydrate: false, max_page_size: 100 });
    expect(linked.status, linked.text).toBe(200);
    const linkedIds = (linked.body.resources as Array<{ id: string }>).map((r) => r.id);
    expect(linkedIds).toEqual(expect.arrayContaining(biosampleIds));

    const run = await request(t.app).get(`/runs/${runId}`).set(bearer(curator));
    expect(run.status, run.text).toBe(200);
    expect(run.body).toEqual({
      id: runId,
      status: 'COMPLETE',
      started_at_time: expect.any(String),
      ended_at_time: expect.any(String),
      was_started_by: CURATOR.username,
      inputs: [run.body.object_id],
      outputs: [],
      job: {
        id: 'metadata-in-1.0.0',
        description: expect.any(String),
        producer: expect.any(String),
        schemaURL: expect.any(String),
      },
      producer: expect.any(String),
      schemaURL: expect.any(String),
      object_id: expect.stringMatching(/^gfs0\w+$/),
      timings_ms: {
        validate: expect.any(Number),
        store_object: expect.any(Number),
        apply: expect.any(Number),
      },
      counts: {
        study_set: { inserted: 1, replaced: 0 },
        biosample_set: { inserted: 3, replaced: 0 },
        data_object_set: { inserted: 1, replaced: 0 },
      },
      errors: [],
    });

    // The payload is kept as a stored object: its record names the payload's size and sha256.
    const object = await t.store.getById('objects', run.body.object_id);
    const bytes = Buffer.from(JSON.stringify(payload));
    expect(object).toMatchObject({
      id: run.body.object_id,
      size: bytes.length,
      mime_type: 'application/json',
      created_by: CURATOR.username,
      checksums: [{ type: 'sha256', checksum: createHash('sha256').update(bytes).digest('hex') }],
    });
  });

  it("applies a submission of 1,200 biosamples on the store's writing thread", async () => {
    const word = uniqueWord();
    const { payload, studyId, biosampleIds } = await submission(word, 1200);
    const counters = (t.store as SqliteDocumentStore).counters;
    const before = { ...counters };
    const res = await submit(curator, payload);
    expect(res.status, res.text).toBe(200);
    expect(counters.writesOnThread).toBe(before.writesOnThread + 1);
    // Begun while the payload was validated, held open, then finished with the run's records.
    expect(counters.holdsFinished).toBe(before.holdsFinished + 1);
    const found = await searchBiosamples(word);
    expect(found.meta.count).toBe(1200);
    const byId = await request(t.app).get(`/nmdcschema/ids/${biosampleIds[1111]}`);
    expect(byId.body).toEqual(payload.biosample_set[1111]);
    const linked = await request(t.app)
      .get('/nmdcschema/linked_instances')
      .query({ ids: biosampleIds[7], hydrate: false, max_page_size: 100 });
    expect((linked.body.resources as Array<{ id: string }>).map((r) => r.id)).toContain(studyId);
    const run = await request(t.app)
      .get(`/runs/${res.body.detail.run_id as string}`)
      .set(bearer(curator));
    expect(run.body).toMatchObject({
      status: 'COMPLETE',
      counts: { biosample_set: { inserted: 1200, replaced: 0 }, study_set: { inserted: 1, replaced: 0 } },
    });
  });

  it('replaces records by id on resubmission, search included', async () => {
    const word = uniqueWord();
    const { payload, biosampleIds } = await submission(word, 2);
    expect((await submit(curator, payload)).status).toBe(200);

    const renamed = uniqueWord();
    const again = {
      biosample_set: [{ ...payload.biosample_set[0]!, name: `Core renamed ${renamed}` }],
    };
    const res = await submit(curator, again);
    expect(res.status, res.text).toBe(200);

    const byId = await request(t.app).get(`/nmdcschema/ids/${biosampleIds[0]}`);
    expect(byId.body.name).toBe(`Core renamed ${renamed}`);
    expect((await searchBiosamples(word)).results.map((r) => r.id)).toEqual([biosampleIds[1]]);
    expect((await searchBiosamples(renamed)).results.map((r) => r.id)).toEqual([biosampleIds[0]]);

    const run = await request(t.app).get(`/runs/${res.body.detail.run_id}`).set(bearer(curator));
    expect(run.body.counts).toEqual({ biosample_set: { inserted: 0, replaced: 1 } });
  });

  it('lets a runtime administrator submit without an allowance', async () => {
    const word = uniqueWord();
    const { payload } = await submission(word, 1);
    const res = await submit(admin, payload);
    expect(res.status, res.text).toBe(200);
    expect(res.body.type).toBe('success');
    expect((await searchBiosamples(word)).meta.count).toBe(1);
    const run = await request(t.app).get(`/runs/${res.body.detail.run_id}`).set(bearer(admin));
    expect(run.body).toMatchObject({ status: 'COMPLETE', was_started_by: ADMIN.username });
  });

  it('answers 403 with the original message without the allowance, and writes nothing', async () => {
    const word = uniqueWord();
    const { payload, studyId } = await submission(word, 1);
    const res = await submit(plain, payload);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'Only specific users are allowed to submit json at this time.' });
    expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
    expect((await searchBiosamples(word)).meta.count).toBe(0);
  });

  it('answers 401 without a token', async () => {
    const res = await submit(undefined, { study_set: [] });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Access token is invalid or missing. Please log in again.' });
  });

  /**
   * Submits `payload` and answers, in the order they came, when its records were serialised and
   * staged, when the indexes' work ahead of its write was done, and when validation began.
   */
  async function submissionSteps(payload: object): Promise<string[]> {
    const steps: string[] = [];
    const prepare = RecordWriter.prototype.prepare;
    vi.spyOn(RecordWriter.prototype, 'prepare').mockImplementation(function (this: RecordWriter, writes) {
      const prepared = prepare.call(this, writes);
      void prepared.serialised.then(() => steps.push('serialised and staged'));
      void prepared.ready.then(() => steps.push('work ahead done'));
      return prepared;
    });
    const validate = MetadataValidator.prototype.validateDatabase;
    vi.spyOn(MetadataValidator.prototype, 'validateDatabase').mockImplementation(async function (
      this: MetadataValidator,
      ...args
    ) {
      steps.push('validation begins');
      return validate.apply(this, args);
    });
    try {
      const res = await submit(curator, payload);
      expect(res.status, res.text).toBe(200);
    } finally {
      vi.restoreAllMocks();
    }
    return steps;
  }

  it('hands the records to the writing thread before it validates them (the write is what the answer waits for)', async () => {
    const { payload } = await submission(uniqueWord(), 1200);
    const steps = await submissionSteps(payload);
    expect(steps.filter((step) => step !== 'work ahead done')).toEqual([
      'serialised and staged',
      'validation begins',
    ]);
  });

  it("validates a small submission without waiting for the indexes' work ahead of its write", async () => {
    const { payload } = await submission(uniqueWord(), 2);
    // The search index prepares the records on a worker thread meanwhile (a round trip at least).
    expect(await submissionSteps(payload)).toEqual([
      'serialised and staged',
      'validation begins',
      'work ahead done',
    ]);
  });

  it('rolls back the write it began while validating when 1,200 biosamples do not validate', async () => {
    const word = uniqueWord();
    const { payload, studyId, biosampleIds } = await submission(word, 1200);
    const counters = (t.store as SqliteDocumentStore).counters;
    const before = { ...counters };
    const runsBefore = await t.store.count('runs', {});
    // The last biosample belongs to a study that exists nowhere. Validation is made to wait until the
    // write begun ahead is held (it races the validation of so few records otherwise).
    const dangling = biosample(biosampleIds[1199]!, 'nmdc:sty-11-zz000001', word);
    let heldAhead!: () => void;
    const holding = new Promise<void>((resolve) => (heldAhead = resolve));
    const hold = RecordWriter.prototype.hold;
    vi.spyOn(RecordWriter.prototype, 'hold').mockImplementation(async function (this: RecordWriter, writes) {
      const held = await hold.call(this, writes);
      heldAhead();
      return held;
    });
    const validate = MetadataValidator.prototype.validateDatabase;
    vi.spyOn(MetadataValidator.prototype, 'validateDatabase').mockImplementation(async function (
      this: MetadataValidator,
      ...args
    ) {
      await holding;
      return validate.apply(this, args);
    });
    let res: request.Response;
    try {
      res = await submit(curator, {
        ...payload,
        biosample_set: [...payload.biosample_set.slice(0, 1199), dangling],
      });
    } finally {
      vi.restoreAllMocks();
    }
    expect(res.status, res.text).toBe(422);
    expect(res.body.validation.detail.biosample_set).toHaveLength(1);
    // The rollback may still be under way when the answer comes; nothing is seen either way.
    for (let i = 0; i < 200 && counters.holdsAborted === before.holdsAborted; i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(counters.holdsAborted).toBe(before.holdsAborted + 1);
    expect(counters.holdsFinished).toBe(before.holdsFinished);
    expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
    expect((await request(t.app).get(`/nmdcschema/ids/${biosampleIds[0]}`)).status).toBe(404);
    expect((await searchBiosamples(word)).meta.count).toBe(0);
    expect(await t.store.count('runs', {})).toBe(runsBefore);
    // The store takes the next submission at once.
    const next = await submission(uniqueWord(), 2);
    expect((await submit(curator, next.payload)).status).toBe(200);
  });

  it('answers 422 with the validation answer for a dangling reference, and writes nothing', async () => {
    const word = uniqueWord();
    const { payload, studyId } = await submission(word, 2);
    const objectsBefore = await t.store.count('objects', {});
    const runsBefore = await t.store.count('runs', {});
    // The second biosample belongs to a study that exists nowhere.
    const dangling = biosample(payload.biosample_set[1]!.id, 'nmdc:sty-11-zz000000', word);
    const res = await submit(curator, { ...payload, biosample_set: [payload.biosample_set[0]!, dangling] });
    expect(res.status, res.text).toBe(422);
    // `detail` is the answer as the original spells it (Python's text of it); `validation` as JSON.
    expect(res.body.validation).toMatchObject({ result: 'errors' });
    const messages = res.body.validation.detail.biosample_set as string[];
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(dangling.id);
    expect(messages[0]).toContain('nmdc:sty-11-zz000000');
    expect(res.body.detail).toBe(
      `{'result': 'errors', 'detail': {'study_set': [], 'biosample_set': ["${messages[0]}"], 'data_object_set': []}}`,
    );

    expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
    expect((await searchBiosamples(word)).meta.count).toBe(0);
    expect(await t.store.count('objects', {})).toBe(objectsBefore);
    expect(await t.store.count('runs', {})).toBe(runsBefore);
  });

  it('answers 422 naming a key that is no collection, and writes nothing', async () => {
    const word = uniqueWord();
    const { payload, studyId } = await submission(word, 1);
    const res = await submit(curator, { ...payload, not_a_collection: [{ id: 'x:1' }] });
    expect(res.status, res.text).toBe(422);
    expect(res.body.validation.result).toBe('errors');
    expect(res.body.detail).toContain(
      `'not_a_collection': ["'not_a_collection' is not a known schema collection name"]`,
    );
    expect(res.body.validation.detail.not_a_collection).toEqual([
      "'not_a_collection' is not a known schema collection name",
    ]);
    expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
  });

  it('answers 422 for a body that is not a Database object', async () => {
    const res = await submit(curator, [{ id: 'nmdc:bsm-11-x' }]);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(expect.anything());
  });

  it('answers 413 for a body over MAX_BODY_BYTES', async () => {
    const filler = 'x'.repeat(t.config.maxBodyBytes);
    const res = await submit(curator, { study_set: [{ id: 'nmdc:sty-11-aa000000', description: filler }] });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      detail: `Request body is larger than the limit of ${t.config.maxBodyBytes} bytes`,
    });
  });

  it('records a failed run and answers 500 when applying fails, leaving no record behind', async () => {
    const word = uniqueWord();
    const { payload, studyId } = await submission(word, 1);
    const original = t.store.upsertAtomically.bind(t.store);
    // Only the submission's own write fails; the failed run is still recorded afterwards.
    t.store.upsertAtomically = async (writes) => {
      if (writes.some((w) => w.collection === 'study_set')) throw new Error('disk full');
      return original(writes);
    };
    let res;
    try {
      res = await submit(curator, payload);
    } finally {
      t.store.upsertAtomically = original;
    }
    expect(res.status).toBe(500);
    const runId = /run (nmdc:sys0\w+)/.exec(res.body.detail)?.[1];
    expect(res.body.detail).toMatch(
      /^Runtime failed to apply metadata-in-1\.0\.0 run nmdc:sys0\w+\. Detail: disk full$/,
    );

    const run = await request(t.app).get(`/runs/${runId}`).set(bearer(curator));
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'FAIL', errors: ['disk full'], counts: {} });
    expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
    expect(await t.store.getById('objects', run.body.object_id)).toBeNull();
  });

  describe('a large body: its records staged while it is read', () => {
    /** A submission whose JSON is over the size read in turns (so its records can be staged as they come). */
    const large = async (word: string) => {
      const made = await submission(word, 2000);
      const text = JSON.stringify(made.payload);
      expect(Buffer.byteLength(text)).toBeGreaterThan(IN_TURNS_FROM_BYTES);
      return { ...made, text };
    };
    const submitText = (token: string, text: string) =>
      request(t.app)
        .post('/metadata/json:submit')
        .set(bearer(token))
        .set('Content-Type', 'application/json')
        .send(text);
    const staged = () => submissionsOf(t).stagedWhileRead;

    it('applies the records it staged as the body came, with the write begun at its last byte', async () => {
      const word = uniqueWord();
      const { text, payload, biosampleIds, studyId } = await large(word);
      const counters = (t.store as SqliteDocumentStore).counters;
      const before = { ...counters, staged: staged() };
      const res = await submitText(curator, text);
      expect(res.status, res.text).toBe(200);
      expect(staged()).toBe(before.staged + 1);
      expect(counters.holdsFinished).toBe(before.holdsFinished + 1);
      expect((await searchBiosamples(word)).meta.count).toBe(2000);
      expect((await request(t.app).get(`/nmdcschema/ids/${biosampleIds[1999]}`)).body).toEqual(
        payload.biosample_set[1999],
      );
      expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).body).toEqual(payload.study_set[0]);
      const run = await request(t.app)
        .get(`/runs/${res.body.detail.run_id as string}`)
        .set(bearer(curator));
      expect(run.body.counts).toEqual({
        study_set: { inserted: 1, replaced: 0 },
        biosample_set: { inserted: 2000, replaced: 0 },
        data_object_set: { inserted: 1, replaced: 0 },
      });
    });

    it('stages the records even when the check begun at the first bytes ends after the route asks', async () => {
      const word = uniqueWord();
      const { text, biosampleIds } = await large(word);
      const before = staged();
      // The first check of the caller (the one begun as the body starts) is slow; the route's is not.
      const original = t.auth.principalOf;
      let calls = 0;
      t.auth.principalOf = async (token) => {
        if (calls++ === 0) await new Promise((resolve) => setTimeout(resolve, 500));
        return original.call(t.auth, token);
      };
      let res;
      try {
        res = await submitText(curator, text);
      } finally {
        t.auth.principalOf = original;
      }
      expect(res.status, res.text).toBe(200);
      expect(calls).toBeGreaterThanOrEqual(2);
      expect(staged()).toBe(before + 1);
      expect((await searchBiosamples(word)).meta.count).toBe(2000);
      expect((await request(t.app).get(`/nmdcschema/ids/${biosampleIds[0]}`)).body.id).toBe(biosampleIds[0]);
    });

    it('writes what JSON.parse reads of a body holding a collection twice, not what was staged', async () => {
      const word = uniqueWord();
      const { text, payload } = await large(word);
      const early = payload.biosample_set.slice(0, 1000);
      // The first biosample_set array is dropped by JSON.parse: only the second one counts.
      const twice = `{"biosample_set":${JSON.stringify(early)},${text.slice(1)}`;
      const before = staged();
      const res = await submitText(curator, twice);
      expect(res.status, res.text).toBe(200);
      expect(staged()).toBe(before);
      expect((await searchBiosamples(word)).meta.count).toBe(2000);
      const run = await request(t.app)
        .get(`/runs/${res.body.detail.run_id as string}`)
        .set(bearer(curator));
      expect(run.body.counts.biosample_set).toEqual({ inserted: 2000, replaced: 0 });
    });

    it('stages nothing for a caller who may not submit, and writes nothing', async () => {
      const word = uniqueWord();
      const { text, studyId } = await large(word);
      const counters = (t.store as SqliteDocumentStore).counters;
      const before = { ...counters, staged: staged() };
      const res = await submitText(plain, text);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: SUBMIT_FORBIDDEN_TEXT });
      expect(staged()).toBe(before.staged);
      expect(counters.holdsFinished + counters.holdsAborted).toBe(before.holdsFinished + before.holdsAborted);
      expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
      expect((await searchBiosamples(word)).meta.count).toBe(0);
    });

    it('refuses a body that stops being JSON half way, writes nothing and takes the next submission', async () => {
      const word = uniqueWord();
      const { text, studyId } = await large(word);
      const at = text.indexOf('"name":"Core 1500');
      const broken = `${text.slice(0, at)}"name":Core${text.slice(at + '"name":"Core'.length)}`;
      const res = await submitText(curator, broken);
      expect(res.status).toBe(422);
      // The quote taken away leaves every later string open by one: the body ends inside one.
      expect(res.body).toEqual({ detail: 'Request body is not valid JSON: Unexpected end of JSON input' });
      expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
      expect((await searchBiosamples(word)).meta.count).toBe(0);
      const next = await large(uniqueWord());
      expect((await submitText(curator, next.text)).status).toBe(200);
    });

    it('writes nothing of a body whose client goes away half way, and takes the next submission', async () => {
      const word = uniqueWord();
      const { text, studyId } = await large(word);
      const server = http.createServer(t.app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const bytes = Buffer.from(text);
        const req = http.request({
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/metadata/json:submit',
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': bytes.length,
            Authorization: `Bearer ${curator}`,
          },
        });
        req.on('error', () => {});
        req.write(bytes.subarray(0, bytes.length >> 1));
        // Its caller checked and half its records parsed (and staged) meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 500));
        req.destroy();
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
      expect((await request(t.app).get(`/nmdcschema/ids/${studyId}`)).status).toBe(404);
      expect((await searchBiosamples(word)).meta.count).toBe(0);
      const next = await large(uniqueWord());
      const res = await submitText(curator, next.text);
      expect(res.status, res.text).toBe(200);
    });
  });

  it('shows a run only to who started it and to runtime administrators; 404 for an unknown run', async () => {
    const { payload } = await submission(uniqueWord(), 1);
    const runId = (await submit(curator, payload)).body.detail.run_id as string;

    const other = await request(t.app).get(`/runs/${runId}`).set(bearer(plain));
    expect(other.status).toBe(403);
    expect(other.body).toEqual({
      detail:
        'Only the user who started a run, a runtime administrator, or the site that carries it out may see it.',
    });
    expect((await request(t.app).get(`/runs/${runId}`).set(bearer(admin))).body.id).toBe(runId);
    expect((await request(t.app).get(`/runs/${runId}`)).status).toBe(401);

    const unknown = await request(t.app).get('/runs/nmdc:sys0unknown').set(bearer(curator));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Run nmdc:sys0unknown not found' });
  });
});
