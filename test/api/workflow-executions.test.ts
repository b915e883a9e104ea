/**
 * `POST /workflows/workflow_executions` through the whole app: a site client posts a workflow
 * execution with its output data objects; they are then found by id under /nmdcschema, by
 * `.search`, and through the provenance graph. Invalid bodies get 422 with the validation answer
 * and write nothing; users' tokens get 403.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import { SITE_CLIENTS_ONLY } from '../../src/http/guards.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { RecordWriter } from '../../search/writer.ts';
import type { Doc } from '../../src/store/port.ts';
import { createTestApp, type TestApp, newSiteClient, passwordToken } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'wfe-root', password: 'Vq7-tundra-mosaic-41-pelican' };

let t: TestApp;
let admin: Record<string, string>;
let siteClient: Record<string, string>;
/** A stored sequencing run and its raw reads: what a read QC run starts from. */
let sequencing: Doc;
let rawReads: Doc;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
/** A random id local part in the schema's alphabet. */
const local = () => [...randomBytes(8)].map((b) => '0123456789abcdefghjkmnpqrstvwxyz'[b & 31]).join('');

/** A read QC run of the stored sequencing run and its outputs, named with `word`. */
function readQcRun(word: string) {
  const wfeId = `nmdc:wfrqc-11-${local()}.1`;
  const outputs = [0, 1].map((i) => ({
    id: `nmdc:dobj-11-${local()}`,
    type: 'nmdc:DataObject',
    name: `${word} filtered reads part ${i}`,
    description: `Filtered reads of ${sequencing.id}`,
    data_category: 'processed_data',
    data_object_type: 'Filtered Sequencing Reads',
    file_size_bytes: 1000 + i,
    md5_checksum: 'a'.repeat(32),
    url: `https://data.example.org/${word}/${i}.fastq.gz`,
    was_generated_by: wfeId,
  }));
  const execution = {
    id: wfeId,
    type: 'nmdc:ReadQcAnalysis',
    name: `Read QC Analysis ${word}`,
    git_url: 'https://github.com/microbiomedata/ReadsQC',
    version: 'v1.0.14',
    started_at_time: '2024-05-01T10:00:00Z',
    ended_at_time: '2024-05-01T11:00:00Z',
    was_informed_by: [sequencing.id],
    has_input: [rawReads.id],
    has_output: outputs.map((o) => o.id),
    processing_institution: 'NMDC',
    execution_resource: 'NERSC-Perlmutter',
  };
  return { execution, outputs, body: { workflow_execution_set: [execution], data_object_set: outputs } };
}

const post = (auth: Record<string, string>, body: unknown) =>
  request(t.app)
    .post('/workflows/workflow_executions')
    .set(auth)
    .send(body as object);

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const db = generateDatabase({ studies: 1, biosamples: 1, dataObjects: 40, seed: 17 });
  sequencing = db.data_generation_set![0]!;
  rawReads = db.data_object_set!.find((d) => (sequencing.has_output as string[]).includes(d.id))!;
  const writer = new RecordWriter(t.store, [t.searchIndex, t.edgeIndex]);
  await writer.upsertAll([
    { collection: 'study_set', docs: db.study_set! },
    { collection: 'biosample_set', docs: db.biosample_set! },
    { collection: 'data_generation_set', docs: [sequencing] },
    { collection: 'data_object_set', docs: [rawReads] },
  ]);

  admin = bearer(await passwordToken(t.app, ADMIN.username, ADMIN.password));
  siteClient = (await newSiteClient(t.app, admin, 'wfe-site')).client;
});
afterAll(async () => t.close());

describe('POST /workflows/workflow_executions', () => {
  it('writes the workflow execution and its data objects; /nmdcschema, search and the provenance graph find them', async () => {
    const word = `qcrun${local()}`;
    const { execution, outputs, body } = readQcRun(word);
    const res = await post(siteClient, body);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ message: 'jobs accepted' });

    const stored = await request(t.app).get(`/nmdcschema/workflow_execution_set/${execution.id}`);
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body).toEqual(execution);
    const byId = await request(t.app).get(`/nmdcschema/ids/${outputs[0]!.id}`);
    expect(byId.body).toEqual(outputs[0]);

    const found = await request(t.app)
      .get('/nmdcschema/data_object_set')
      .query({ filter: JSON.stringify({ name: { $regex: word } }) });
    expect(found.status, found.text).toBe(200);
    expect(found.body.resources.map((d: Doc) => d.id).sort()).toEqual(outputs.map((o) => o.id).sort());
    const searched = await request(t.app)
      .get('/data_objects')
      .query({ filter: `name.search:${word}` });
    expect(searched.body.meta.count).toBe(2);

    // The provenance graph has the new run downstream of the raw reads at once.
    const linked = await request(t.app)
      .get('/nmdcschema/linked_instances')
      .query({ ids: rawReads.id, hydrate: false, types: 'nmdc:WorkflowExecution' });
    expect(linked.status, linked.text).toBe(200);
    expect(linked.body.resources.map((r: Doc) => r.id)).toContain(execution.id);
  });

  it('replaces records with the same id when posted again', async () => {
    const { execution, body } = readQcRun(`qcrun${local()}`);
    expect((await post(siteClient, body)).status).toBe(200);
    const renamed = { ...execution, name: 'Read QC Analysis, rerun' };
    const again = await post(siteClient, { ...body, workflow_execution_set: [renamed] });
    expect(again.status, again.text).toBe(200);
    expect((await request(t.app).get(`/nmdcschema/ids/${execution.id}`)).body.name).toBe(
      'Read QC Analysis, rerun',
    );
  });

  it('answers 422 with the validation answer for a dangling reference, and writes nothing', async () => {
    const { execution, outputs } = readQcRun(`qcrun${local()}`);
    const missingInput = `nmdc:dobj-11-${local()}`;
    const res = await post(siteClient, {
      workflow_execution_set: [{ ...execution, has_input: [missingInput] }],
      data_object_set: outputs,
    });
    expect(res.status).toBe(422);
    expect(typeof res.body.detail).toBe('string');
    expect(res.body.detail).toMatch(
      /^\{'result': 'errors', 'detail': \{'workflow_execution_set': \["Document /,
    );
    expect(res.body.validation.result).toBe('errors');
    expect(res.body.validation.detail.data_object_set).toEqual([]);
    expect(res.body.validation.detail.workflow_execution_set).toEqual([
      expect.stringContaining(`references a document having id '${missingInput}'`),
    ]);
    expect((await request(t.app).get(`/nmdcschema/ids/${execution.id}`)).status).toBe(404);
    expect((await request(t.app).get(`/nmdcschema/ids/${outputs[0]!.id}`)).status).toBe(404);
  });

  it('answers 422 naming a record that breaks the schema, and a key that is no collection', async () => {
    const { execution } = readQcRun(`qcrun${local()}`);
    const { type: _type, ...untyped } = execution;
    const res = await post(siteClient, { workflow_execution_set: [untyped], jobs: [] });
    expect(res.status).toBe(422);
    expect(res.body.validation.result).toBe('errors');
    expect(res.body.validation.detail.jobs).toEqual(["'jobs' is not a known schema collection name"]);
    expect(res.body.validation.detail.workflow_execution_set.length).toBeGreaterThan(0);
    expect(res.body.validation.detail.workflow_execution_set.join('\n')).toContain(
      '/workflow_execution_set/0',
    );
    expect(res.body.detail).toContain(`'jobs': ["'jobs' is not a known schema collection name"]`);
  });

  it('answers 403 to a user, even a runtime administrator, and 401 without a token', async () => {
    const { execution, body } = readQcRun(`qcrun${local()}`);
    const asUser = await post(admin, body);
    expect(asUser.status).toBe(403);
    expect(asUser.body).toEqual({ detail: SITE_CLIENTS_ONLY });
    const anonymous = await post({}, body);
    expect(anonymous.status).toBe(401);
    expect((await request(t.app).get(`/nmdcschema/ids/${execution.id}`)).status).toBe(404);
  });

  it('accepts an empty Database and writes nothing', async () => {
    const res = await post(siteClient, { '@type': 'Database' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ message: 'jobs accepted' });
  });
});
