/**
 * `POST /metadata/changesheets:validate` and `:submit` through the whole app (multipart upload,
 * request and response validation included): the records as they would become, schema and
 * reference errors from the validator, bad sheets refused by line, the upload limit, the allowance,
 * and a submit that changes the records (by id and in search) and keeps the sheet.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { openStoredObjects, type StoredObjects } from '../../src/objects/stored-objects.ts';
import { Changesheets } from '../../src/changesheets/changesheets.ts';
import { RecordWriter } from '../../search/writer.ts';
import type { Doc } from '../../src/store/port.ts';
import { createTestApp, type TestApp, passwordToken } from '../support/server.ts';
import { MESSAGE_CHARS } from '../../src/changesheets/problems.ts';

setBcryptCost(4);

const ADMIN_PASSWORD = 'changesheet-admin-passphrase';
const CURATOR_PASSWORD = 'curator-of-marsh-records-77';

let t: TestApp;
let admin: string;

const login = (username: string, password: string) => passwordToken(t.app, username, password);

/** A new curator (no allowance yet) and their token. */
async function newCurator(): Promise<{ username: string; token: string }> {
  const username = `curator${randomBytes(4).toString('hex')}`;
  const created = await request(t.app)
    .post('/users')
    .set('Authorization', `Bearer ${admin}`)
    .send({ username, password: CURATOR_PASSWORD });
  expect(created.status).toBe(201);
  return { username, token: await login(username, CURATOR_PASSWORD) };
}

/** A study and a biosample of it with ids of their own, stored; answers them. */
async function seedMarsh(): Promise<{ study: Doc; biosample: Doc }> {
  const tag = randomBytes(4).toString('hex');
  const study: Doc = {
    id: `nmdc:sty-11-cs${tag}`,
    type: 'nmdc:Study',
    name: `Tidal marsh soil cores ${tag}`,
    study_category: 'research_study',
    principal_investigator: { type: 'nmdc:PersonValue', name: 'Old PI', has_raw_value: 'Old PI' },
    websites: ['https://example.org/marsh'],
  };
  const term = (id: string) => ({
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id, type: 'nmdc:OntologyClass' },
  });
  const biosample: Doc = {
    id: `nmdc:bsm-11-cs${tag}`,
    type: 'nmdc:Biosample',
    name: `Marsh core ${tag}`,
    associated_studies: [study.id],
    env_broad_scale: term('ENVO:00000446'),
    env_local_scale: term('ENVO:00000114'),
    env_medium: term('ENVO:00001998'),
    ph: 6.1,
  };
  await t.store.upsertMany('study_set', [study]);
  await t.store.upsertMany('biosample_set', [biosample]);
  await t.searchIndex.index('study_set', [study]);
  await t.searchIndex.index('biosample_set', [biosample]);
  return { study, biosample };
}

const tsv = (rows: string[][]) =>
  ['id\taction\tattribute\tvalue', ...rows.map((r) => r.join('\t'))].join('\n') + '\n';

function upload(
  path: string,
  text: string,
  options: { token?: string; filename?: string; contentType?: string } = {},
) {
  const req = request(t.app)
    .post(path)
    .attach('uploaded_file', Buffer.from(text), {
      filename: options.filename ?? 'fixes.tsv',
      contentType: options.contentType ?? 'text/tab-separated-values',
    });
  return options.token ? req.set('Authorization', `Bearer ${options.token}`) : req;
}

const validate = (text: string, options?: Parameters<typeof upload>[2]) =>
  upload('/metadata/changesheets:validate', text, options);
const submit = (text: string, options?: Parameters<typeof upload>[2]) =>
  upload('/metadata/changesheets:submit', text, options);

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: 'cs-root', ADMIN_PASSWORD });
  admin = await login('cs-root', ADMIN_PASSWORD);
});
afterAll(async () => t?.close());

describe('POST /metadata/changesheets:validate', () => {
  it('answers the update commands and the records as they would become, without a login, changing nothing', async () => {
    const { study, biosample } = await seedMarsh();
    const sheet = tsv([
      [study.id, 'update', 'name', 'Renamed marsh study'],
      ['', 'insert', 'websites', 'https://example.org/cores'],
      ['', 'update', 'principal_investigator.name', 'Ada Lovelace'],
      ['', 'insert', 'has_credit_associations', 'v1'],
      ['v1', '', 'applied_roles', 'Investigation'],
      ['v1', '', 'applies_to_person.name', 'Grace Hopper'],
      ['v1', '', 'applies_to_person.type', 'nmdc:PersonValue'],
      ['v1', '', 'type', 'prov:Association'],
      [biosample.id, 'update', 'ph', '5.58'],
      ['', '', 'depth.has_numeric_value', '0.38'],
      ['', '', 'depth.has_unit', 'm'],
      ['', '', 'depth.type', 'nmdc:QuantityValue'],
    ]);
    const res = await validate(sheet);
    expect(res.status).toBe(200);
    const studyAfter = {
      ...study,
      name: 'Renamed marsh study',
      websites: ['https://example.org/marsh', 'https://example.org/cores'],
      principal_investigator: { type: 'nmdc:PersonValue', name: 'Ada Lovelace', has_raw_value: 'Old PI' },
      has_credit_associations: [
        {
          applied_roles: ['Investigation'],
          applies_to_person: { name: 'Grace Hopper', type: 'nmdc:PersonValue' },
          type: 'prov:Association',
        },
      ],
    };
    const biosampleAfter = {
      ...biosample,
      ph: 5.58,
      depth: { has_numeric_value: 0.38, has_unit: 'm', type: 'nmdc:QuantityValue' },
    };
    expect(res.body.results_of_updates).toEqual([
      {
        id: study.id,
        doc_before: study,
        update_info: { n: 4, nModified: 4, ok: 1 },
        doc_after: studyAfter,
        validation_errors: [],
      },
      {
        id: biosample.id,
        doc_before: biosample,
        update_info: { n: 4, nModified: 4, ok: 1 },
        doc_after: biosampleAfter,
        validation_errors: [],
      },
    ]);
    expect(res.body.update_cmd[biosample.id]).toEqual({
      update: 'biosample_set',
      updates: [
        { q: { id: biosample.id }, u: { $set: { ph: 5.58 } } },
        { q: { id: biosample.id }, u: { $set: { 'depth.has_numeric_value': 0.38 } } },
        { q: { id: biosample.id }, u: { $set: { 'depth.has_unit': 'm' } } },
        { q: { id: biosample.id }, u: { $set: { 'depth.type': 'nmdc:QuantityValue' } } },
      ],
    });
    expect(res.body.update_cmd[study.id].updates[1]).toEqual({
      q: { id: study.id },
      u: { $addToSet: { websites: { $each: ['https://example.org/cores'] } } },
    });

    const stored = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(study.id)}`);
    expect(stored.body.name).toBe(study.name);
  });

  it('reads CSV by its extension', async () => {
    const { study } = await seedMarsh();
    const res = await validate(`id,action,attribute,value\n${study.id},update,description,"Cores, tidal"\n`, {
      filename: 'fixes.csv',
      contentType: 'application/octet-stream',
    });
    expect(res.status).toBe(200);
    expect(res.body.results_of_updates[0].doc_after.description).toBe('Cores, tidal');
  });

  it('refuses records the schema would not accept, with the validator messages (422)', async () => {
    const { study, biosample } = await seedMarsh();
    const res = await validate(
      tsv([
        [study.id, 'update', 'websites', 'marsh.example.org'],
        [biosample.id, 'update', 'associated_studies', 'nmdc:sty-11-nosuch00'],
      ]),
    );
    expect(res.status).toBe(422);
    expect(res.body.detail.update_cmd[study.id]).toEqual({
      update: 'study_set',
      updates: [{ q: { id: study.id }, u: { $set: { websites: ['marsh.example.org'] } } }],
    });
    const [studyErrors, biosampleErrors] = res.body.detail.validation_errors as string[][];
    expect(studyErrors).toHaveLength(1);
    expect(studyErrors![0]).toContain("'marsh.example.org' does not match");
    expect(studyErrors![0]).toContain(`/study_set/0/websites/0 (id '${study.id}')`);
    expect(biosampleErrors!.join(' ')).toContain('nmdc:sty-11-nosuch00');
  });

  it('refuses a sheet naming each bad line and column (400)', async () => {
    const { study } = await seedMarsh();
    const res = await validate(
      tsv([
        [study.id, 'update', 'colour', 'red'],
        ['nmdc:sty-11-missing0', 'update', 'name', 'x'],
      ]),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail:
        "line 2, column attribute: 'colour' is not a slot of Study; line 3, column id: no record has the id 'nmdc:sty-11-missing0'",
    });
    const unknownAction = await validate(tsv([[study.id, 'append', 'name', 'x']]));
    expect(unknownAction.status).toBe(400);
    expect(unknownAction.body.detail).toMatch(
      /^line 2, column action: unknown action 'append' \(the actions are 'insert'/,
    );
  });

  it('refuses files that are neither TSV nor CSV, as the original words it', async () => {
    const res = await validate('id\taction\tattribute\tvalue\n', {
      filename: 'fixes.txt',
      contentType: 'text/plain',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail:
        "file fixes.txt has content type 'text/plain'. Only ['text/csv', 'text/tab-separated-values'] files are permitted.",
    });
  });

  it('needs the uploaded_file file part (422)', async () => {
    const missing = await request(t.app).post('/metadata/changesheets:validate').field('other', 'x');
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toContain('uploaded_file');

    const plainField = await request(t.app)
      .post('/metadata/changesheets:validate')
      .field('uploaded_file', 'id\taction');
    expect(plainField.status).toBe(422);
    expect(plainField.body).toEqual({
      detail: 'uploaded_file must be a file part (with a filename), not a plain form field',
    });

    const json = await request(t.app).post('/metadata/changesheets:validate').send({ uploaded_file: 'x' });
    expect(json.status).toBe(415);
    expect(json.body).toEqual({
      detail:
        'Content-Type application/json is not accepted by POST /metadata/changesheets:validate; send multipart/form-data',
    });
  });

  it('tells each problem in at most MESSAGE_CHARS characters, however much of the file it quotes', async () => {
    // A header of 200,000 characters, and an id as long: each is quoted in its problem.
    const header = await validate(`${'x'.repeat(200_000)}\n`);
    expect(header.status).toBe(400);
    expect(header.body.detail).toMatch(
      /^line 1: the changesheet lacks the columns 'id', 'action', 'attribute', 'value' \(the header must name id, action, attribute and value, and names 'x{100,}… \(200,\d{3} characters in all\)$/,
    );
    expect(header.body.detail.length).toBeLessThan(MESSAGE_CHARS + 40);
    const longId = `nmdc:bsm-11-${'y'.repeat(200_000)}`;
    const rows = await validate(
      tsv([
        [longId, 'update', 'name', 'n'],
        ['nmdc:bsm-11-nothere', 'update', 'name', 'n'],
      ]),
    );
    expect(rows.status).toBe(400);
    const [first, second] = String(rows.body.detail).split('; ');
    expect(first).toMatch(
      /^line 2, column id: no record has the id 'nmdc:bsm-11-y{100,}… \(200,\d{3} characters in all\)$/,
    );
    expect(first!.length).toBeLessThan(MESSAGE_CHARS + 40);
    // The problems after it are listed in full.
    expect(second).toBe("line 3, column id: no record has the id 'nmdc:bsm-11-nothere'");
  });

  it('refuses a file larger than MAX_BODY_BYTES (413)', async () => {
    const small = await createTestApp({ MAX_BODY_BYTES: '2048' });
    try {
      // Found while reading (a few kB), and refused from the announced length alone (64 kB more).
      for (const rows of [200, 5000]) {
        const big = tsv(
          Array.from({ length: rows }, () => ['nmdc:sty-11-x', 'update', 'name', 'a rather long name']),
        );
        const res = await request(small.app)
          .post('/metadata/changesheets:validate')
          .attach('uploaded_file', Buffer.from(big), {
            filename: 'big.tsv',
            contentType: 'text/tab-separated-values',
          });
        expect(res.status).toBe(413);
        expect(res.body).toEqual({
          detail:
            'The uploaded file is larger than the limit of 2048 bytes (MAX_BODY_BYTES); split the changesheet into smaller ones',
        });
      }
    } finally {
      await small.close();
    }
  });
});

describe('POST /metadata/changesheets:submit', () => {
  it('needs a login (401) and the allowance (403)', async () => {
    const { study } = await seedMarsh();
    const sheet = tsv([[study.id, 'update', 'name', 'Not applied']]);
    const anonymous = await submit(sheet);
    expect(anonymous.status).toBe(401);

    const curator = await newCurator();
    const refused = await submit(sheet, { token: curator.token });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      detail: 'Only specific users are allowed to apply changesheets at this time.',
    });
    const stored = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(study.id)}`);
    expect(stored.body.name).toBe(study.name);
  });

  it('with the allowance applies the sheet: records by id and in search, and the sheet kept as an object', async () => {
    const { study, biosample } = await seedMarsh();
    const curator = await newCurator();
    const granted = await request(t.app)
      .post('/admin/allowances')
      .set('Authorization', `Bearer ${admin}`)
      .send({ username: curator.username, action: '/metadata/changesheets:submit' });
    expect(granted.status).toBe(201);

    const word = `saltgrass${randomBytes(3).toString('hex')}`;
    const sheet = tsv([
      [study.id, 'update', 'name', `Marsh cores of ${word}`],
      ['', 'remove', 'principal_investigator', ''],
      [biosample.id, 'update', 'ph', '5.58'],
    ]);
    const res = await submit(sheet, { token: curator.token, filename: 'marsh fixes.tsv' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^gfs0[0-9a-z]+$/),
      name: 'marsh_fixes.tsv',
      size: Buffer.byteLength(sheet),
      created_time: expect.any(String),
      mime_type: 'text/tab-separated-values',
      description: 'changesheet',
      checksums: [{ type: 'sha256', checksum: createHash('sha256').update(sheet).digest('hex') }],
      types: ['metadata-changesheet'],
      created_by: curator.username,
    });

    const studyNow = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(study.id)}`);
    expect(studyNow.status).toBe(200);
    const { principal_investigator: _dropped, ...studyRest } = study;
    expect(studyNow.body).toEqual({ ...studyRest, name: `Marsh cores of ${word}` });
    const biosampleNow = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(biosample.id)}`);
    expect(biosampleNow.body.ph).toBe(5.58);

    const found = await request(t.app)
      .get('/studies')
      .query({ filter: `name.search:${word}` });
    expect(found.status).toBe(200);
    expect(found.body.results.map((s: Doc) => s.id)).toEqual([study.id]);
    const oldName = await request(t.app)
      .get('/studies')
      .query({ filter: `name.search:${study.name}` });
    expect(oldName.body.results).toEqual([]);

    expect(await t.store.getById('objects', res.body.id)).toEqual(res.body);
    const objects = await openStoredObjects(t.dataDir, t.store);
    expect((await objects.read(res.body.id))?.toString('utf8')).toBe(sheet);
  });

  it('lets runtime administrators submit; an invalid sheet writes nothing', async () => {
    const { study } = await seedMarsh();
    const invalid = await submit(tsv([[study.id, 'update', 'study_category', 'not_a_category']]), {
      token: admin,
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail.validation_errors[0].join(' ')).toContain('not_a_category');
    expect((await t.store.find('objects', { types: 'metadata-changesheet', name: 'fixes.tsv' })).length).toBe(
      0,
    );
    const unchanged = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(study.id)}`);
    expect(unchanged.body.study_category).toBe('research_study');

    const ok = await submit(tsv([[study.id, 'insert', 'alternative_names', 'Salt marsh']]), { token: admin });
    expect(ok.status).toBe(200);
    expect(ok.body.created_by).toBe('cs-root');
    const now = await request(t.app).get(`/nmdcschema/ids/${encodeURIComponent(study.id)}`);
    expect(now.body.alternative_names).toEqual(['Salt marsh']);
  });

  it('refuses (409) when a record changes between the check and the write, and writes nothing', async () => {
    const { study } = await seedMarsh();
    const objects = await openStoredObjects(t.dataDir, t.store);
    // Another writer changes the study while the sheet's bytes are being kept.
    const racing = {
      prepare: async (input: Parameters<StoredObjects['prepare']>[0]) => {
        await t.store.upsertMany('study_set', [{ ...study, description: 'written meanwhile' }]);
        return objects.prepare(input);
      },
    } as unknown as StoredObjects;
    const changesheets = new Changesheets(
      t.store,
      new RecordWriter(t.store, [t.searchIndex, t.edgeIndex]),
      racing,
      t.logger,
    );
    const principal = { kind: 'user' as const, subject: 'cs-root', isRuntimeAdmin: true };
    const sheet = tsv([[study.id, 'update', 'name', 'Lost update']]);
    await expect(
      changesheets.submit({ filename: 'race.tsv', content: Buffer.from(sheet) }, principal),
    ).rejects.toMatchObject({
      kind: 'conflict',
      detail: `The record ${study.id} changed while this changesheet was being checked; submit the changesheet again.`,
    });
    const now = await t.store.getById('study_set', study.id);
    expect(now).toEqual({ ...study, description: 'written meanwhile' });
    expect(await t.store.find('objects', { name: 'race.tsv' })).toEqual([]);
  });
});
