/**
 * `POST /metadata/json:validate` through the whole app (request and response validation against
 * openapi.yaml included): the original's answer shapes, references against stored records, and
 * the nmdc-schema example data over HTTP.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { collectionOfId } from '../../src/schema/nmdc.ts';
import { PROBLEMS_LISTED } from '../../src/validation/index.ts';
import { createTestApp, type TestApp, passwordToken } from '../support/server.ts';
import { prepareData } from '../../src/startup.ts';
import { loadCurrentDocument } from '../../src/http/openapi-documents.ts';

setBcryptCost(4);

const EXAMPLES = path.join(import.meta.dirname, '../fixtures/nmdc-schema-examples');
const example = (file: string) => JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8')) as object;

const term = (id: string) => ({
  type: 'nmdc:ControlledIdentifiedTermValue',
  term: { id, type: 'nmdc:OntologyClass' },
});
const biosample = (id: string, study: string, extra: Record<string, unknown> = {}) => ({
  id,
  type: 'nmdc:Biosample',
  name: `Core ${id}`,
  associated_studies: [study],
  env_broad_scale: term('ENVO:00000446'),
  env_local_scale: term('ENVO:00000114'),
  env_medium: term('ENVO:00001998'),
  ...extra,
});

describe('POST /metadata/json:validate', () => {
  let t: TestApp;
  let token: string;
  const validate = (body: unknown) =>
    request(t.app)
      .post('/metadata/json:validate')
      .send(body as object);

  beforeAll(async () => {
    t = await createTestApp({ ADMIN_USERNAME: 'root', ADMIN_PASSWORD: 'root-password-1' });
    token = await passwordToken(t.app, 'root', 'root-password-1');
  });
  afterAll(async () => t.close());

  it('answers All Okay! for a study and a biosample of it, with or without @type', async () => {
    const body = {
      study_set: [{ id: 'nmdc:sty-11-aaaa0001', type: 'nmdc:Study', study_category: 'research_study' }],
      biosample_set: [biosample('nmdc:bsm-11-aaaa0001', 'nmdc:sty-11-aaaa0001')],
    };
    for (const payload of [body, { ...body, '@type': 'Database' }, { study_set: [] }, {}]) {
      const res = await validate(payload);
      expect(res.status).toBe(200);
      // nmdc_api_utilities compares the body text byte for byte.
      expect(res.text).toBe('{"result":"All Okay!"}');
    }
  });

  it('answers the errors per collection, each message naming the rule, the place and the record', async () => {
    const res = await validate({
      studi_set: [],
      study_set: [],
      biosample_set: [
        biosample('nmdc:bsm-11-aaaa0002', 'nmdc:sty-11-aaaa0001', {
          lat_lon: { latitude: 38.92, type: 'nmdc:GeolocationValue' },
        }),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      result: 'errors',
      detail: {
        studi_set: ["'studi_set' is not a known schema collection name"],
        study_set: [],
        biosample_set: [
          "'longitude' is a required property in /biosample_set/0/lat_lon (id 'nmdc:bsm-11-aaaa0002')",
        ],
      },
    });
  });

  it('checks references against the stored records, and names the broken one', async () => {
    const study = 'nmdc:sty-11-stored01';
    const payload = { biosample_set: [biosample('nmdc:bsm-11-aaaa0003', study)] };
    const before = await validate(payload);
    expect(before.body).toEqual({
      result: 'errors',
      detail: {
        biosample_set: [
          `Document 'nmdc:bsm-11-aaaa0003' in collection 'biosample_set' has a field 'associated_studies' that references a document having id '${study}', but the latter document does not exist in any of the collections the NMDC Schema says it can exist in (study_set); at /biosample_set/0/associated_studies/0`,
        ],
      },
    });
    await t.store.upsertMany('study_set', [
      { id: study, type: 'nmdc:Study', study_category: 'research_study' },
    ]);
    expect((await validate(payload)).body).toEqual({ result: 'All Okay!' });
  });

  it('is public: a bearer token is not needed, and one sent (valid or not) changes nothing', async () => {
    const payload = { study_set: [] };
    for (const authorization of [`Bearer ${token}`, 'Bearer not-a-token']) {
      const res = await request(t.app)
        .post('/metadata/json:validate')
        .set('Authorization', authorization)
        .send(payload);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ result: 'All Okay!' });
    }
  });

  it('answers 422 for a body that is not a Database object (as the original does)', async () => {
    const notJson = await request(t.app)
      .post('/metadata/json:validate')
      .set('Content-Type', 'application/json')
      .send('{"study_set": [');
    expect(notJson.status).toBe(422);
    expect(notJson.body.detail).toEqual(expect.anything());
    const notList = await validate({ study_set: 'x' });
    expect(notList.status).toBe(422);
    expect(JSON.stringify(notList.body.detail)).toMatch(/study_set/);
  });

  it('quotes long ids, keys and references cut short, so an answer is never many times its request', async () => {
    const long = (prefix: string) => `${prefix}${'z'.repeat(200_000)}`;
    // A record breaking five rules names its id in each message; a dangling reference names both ids.
    const res = await validate({
      biosample_set: [{ id: long('nmdc:bsm-11-'), type: 'nmdc:Biosample' }],
      [long('x_set')]: [],
    });
    expect(res.status).toBe(200);
    const text = JSON.stringify(res.body);
    expect(text.length).toBeLessThan(250_000); // the unknown key itself is the detail's key, once
    const messages = res.body.detail.biosample_set as string[];
    expect(messages.length).toBeGreaterThanOrEqual(4);
    for (const m of messages) expect(m).toMatch(/ \(id 'nmdc:bsm-11-z{108}\.\.\.'\)$/);
    expect(res.body.detail[long('x_set')]).toEqual([
      `'x_set${'z'.repeat(115)}...' is not a known schema collection name`,
    ]);
    const dangling = await validate({
      biosample_set: [biosample(long('nmdc:bsm-11-'), long('nmdc:sty-11-'))],
    });
    const [reference] = dangling.body.detail.biosample_set as string[];
    expect(reference).toBe(
      `Document 'nmdc:bsm-11-${'z'.repeat(108)}...' in collection 'biosample_set' has a field 'associated_studies' ` +
        `that references a document having id 'nmdc:sty-11-${'z'.repeat(108)}...', but the latter document does ` +
        'not exist in any of the collections the NMDC Schema says it can exist in (study_set); at /biosample_set/0/associated_studies/0',
    );
  });

  it('lists at most PROBLEMS_LISTED problems a collection, saying where checking stopped or how many more', async () => {
    // 30,000 records missing their required slots: about 180,000 messages before (a 0.9 MB request, a 16 MB answer).
    const bare = Array.from({ length: 30_000 }, (_, i) => ({ id: `nmdc:bsm-11-b${i}` }));
    const res = await validate({ biosample_set: bare });
    expect(res.status).toBe(200);
    const listed = res.body.detail.biosample_set as string[];
    expect(listed[0]).toBe(
      "'associated_studies' is a required property in /biosample_set/0 (id 'nmdc:bsm-11-b0')",
    );
    // Six problems a record: checking stops after the record that brings them to 1,000 or more.
    const perRecord = listed.filter((m) => m.endsWith("(id 'nmdc:bsm-11-b0')")).length;
    const records = Math.ceil(PROBLEMS_LISTED / perRecord);
    expect(listed).toHaveLength(records * perRecord + 1);
    expect(listed.at(-1)).toBe(
      `checking /biosample_set stopped at ${(records * perRecord).toLocaleString('en-US')} problems, ` +
        `at /biosample_set/${records - 1}: the records after it were not checked`,
    );
    expect(JSON.stringify(res.body).length).toBeLessThan(200_000);

    // Broken references past the bound are counted.
    const dangling = Array.from({ length: PROBLEMS_LISTED + 250 }, (_, i) =>
      biosample(`nmdc:bsm-11-d${i}`, `nmdc:sty-11-nowhere${i}`),
    );
    const refs = await validate({ biosample_set: dangling });
    const refMessages = refs.body.detail.biosample_set as string[];
    expect(refMessages).toHaveLength(PROBLEMS_LISTED + 1);
    expect(refMessages[0]).toMatch(
      /^Document 'nmdc:bsm-11-d0' in collection 'biosample_set' .* having id 'nmdc:sty-11-nowhere0'/,
    );
    expect(refMessages.at(-1)).toBe(
      'and 250 more references of /biosample_set that resolve nowhere (not listed)',
    );
  });

  it('answers 413 beyond MAX_BODY_BYTES', async () => {
    const big = {
      study_set: [{ id: 'nmdc:sty-11-aaaa0009', description: 'x'.repeat(t.config.maxBodyBytes) }],
    };
    const res = await validate(big);
    expect(res.status).toBe(413);
    expect(res.body.detail).toEqual(expect.any(String));
  });

  it('validates nmdc-schema example data: a valid example once its referenced records are stored', async () => {
    const file = 'valid/Database-biosamples-1.json';
    const missing =
      (example('missing-references.json') as Record<string, string[]>)['Database-biosamples-1.json'] ?? [];
    for (const id of missing) await t.store.upsertMany(collectionOfId(id)!, [{ id }]);
    const res = await validate(example(file));
    expect(res.body).toEqual({ result: 'All Okay!' });
  });

  it('rejects an invalid nmdc-schema example with its place', async () => {
    const res = await validate(example('invalid/Database-Biosample-missing_longitude.json'));
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('errors');
    expect(res.body.detail.biosample_set).toEqual([
      "'longitude' is a required property in /biosample_set/0/lat_lon (id 'nmdc:bsm-99-dtTMNb')",
    ]);
  });
});

describe('the documented examples of POST /metadata/json:validate', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    await prepareData({ ...t, config: { ...t.config, demoData: true } });
  }, 60_000);
  afterAll(async () => t?.close());

  it('answer on the demo data as openapi.yaml shows', async () => {
    const operation = (loadCurrentDocument() as any).paths['/metadata/json:validate'].post;
    const requests = operation.requestBody.content['application/json'].examples;
    const answers = operation.responses['200'].content['application/json'].examples;
    const valid = await request(t.app).post('/metadata/json:validate').send(requests.studyAndBiosample.value);
    expect(valid.body).toEqual(answers.valid.value);
    const invalid = await request(t.app)
      .post('/metadata/json:validate')
      .send(requests.biosampleOfStoredStudy.value);
    expect(invalid.body).toEqual(answers.invalid.value);
  });
});
