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
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { createTestApp, type TestApp, newSiteClient, passwordToken } from '../support/server.ts';

setBcryptCost(4);

const ADMIN = { username: 'wfe-root', password: 'Vq7-tundra-mosaic-41-pelican' };

let t: TestApp;
let admin: Record<string, string>;
let siteClient: Record<string, string>;
let siteClientId: string;
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
  ({ client: siteClient, clientId: siteClientId } = await newSiteClient(t.app, admin, 'wfe-site'));
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

describe('DELETE /workflows/workflow_executions/{id}', () => {
  const writer = () => new RecordWriter(t.store, [t.searchIndex, t.edgeIndex]);
  const remove = (auth: Record<string, string>, id: string, query: Record<string, string> = {}) =>
    request(t.app).delete(`/workflows/workflow_executions/${id}`).query(query).set(auth);
  const ids = (docs: Doc[]) => docs.map((d) => d.id).sort();

  /**
   * A read QC run of the stored raw reads (posted by the site), an assembly of its first output,
   * an annotation of the assembly with two aggregated annotations and a job, and beside them an
   * unrelated run of the same raw reads with its own aggregated annotation and job.
   */
  async function lineage(word: string) {
    const qc = readQcRun(word);
    expect((await post(siteClient, qc.body)).status).toBe(200);
    const dobj = (name: string) => ({
      id: `nmdc:dobj-11-${local()}`,
      type: 'nmdc:DataObject',
      name: `${word} ${name}`,
      description: name,
      data_category: 'processed_data',
      data_object_type: 'Assembly Contigs',
    });
    const contigs = dobj('contigs');
    const annotationGff = dobj('annotation gff');
    const otherOutput = dobj('other output');
    const run = (code: string, type: string, input: string, output: string) => ({
      id: `nmdc:${code}-11-${local()}.1`,
      type,
      name: `${word} ${type}`,
      git_url: 'https://github.com/microbiomedata/example',
      version: 'v1',
      started_at_time: '2024-05-01T10:00:00Z',
      ended_at_time: '2024-05-01T11:00:00Z',
      was_informed_by: [sequencing.id],
      has_input: [input],
      has_output: [output],
      processing_institution: 'NMDC',
      execution_resource: 'NERSC-Perlmutter',
    });
    const assembly = run('wfmgas', 'nmdc:MetagenomeAssembly', qc.outputs[0]!.id, contigs.id);
    const annotation = run('wfmgan', 'nmdc:MetagenomeAnnotation', contigs.id, annotationGff.id);
    const unrelated = run('wfmgan', 'nmdc:MetagenomeAnnotation', rawReads.id, otherOutput.id);
    const aggregate = (wfe: string, gene: string, count: number) => ({
      was_generated_by: wfe,
      gene_function_id: gene,
      count,
      type: 'nmdc:FunctionalAnnotationAggMember',
    });
    await writer().upsertAll([
      { collection: 'data_object_set', docs: [contigs, annotationGff, otherOutput] },
      { collection: 'workflow_execution_set', docs: [assembly, annotation, unrelated] },
      {
        collection: 'functional_annotation_agg',
        docs: [
          aggregate(annotation.id, 'PFAM:PF12705', 4),
          aggregate(annotation.id, 'PFAM:PF00001', 2),
          aggregate(unrelated.id, 'PFAM:PF00001', 7),
        ],
      },
    ]);
    const job = (activity: string) => ({
      id: `nmdc:sys0${local()}`,
      workflow: { id: 'Metagenome Annotation: v1.0.4' },
      config: { activity_id: activity },
      claims: [],
    });
    const jobs = { qc: job(qc.execution.id), annotation: job(annotation.id), unrelated: job(unrelated.id) };
    await t.store.upsertMany('jobs', Object.values(jobs));
    const aggregates = async (wfe: string) =>
      ids(await t.store.find('functional_annotation_agg', { was_generated_by: wfe }));
    return { qc, contigs, annotationGff, otherOutput, assembly, annotation, unrelated, jobs, aggregates };
  }

  it('deletes the execution, its downstream executions, their outputs, aggregated annotations and jobs, in store, search and graph', async () => {
    const word = `cascade${local()}`;
    const l = await lineage(word);
    const annotationAggregates = await l.aggregates(l.annotation.id);
    expect(annotationAggregates).toHaveLength(2);
    const expected = {
      message: 'Workflow execution and dependencies deleted successfully',
      deleted_workflow_execution_ids: [l.qc.execution.id, l.assembly.id, l.annotation.id],
      deleted_data_object_ids: [...l.qc.outputs.map((o) => o.id), l.contigs.id, l.annotationGff.id],
      deleted_functional_annotation_agg_oids: annotationAggregates,
      deleted_job_ids: [l.jobs.qc.id, l.jobs.annotation.id].sort(),
    };

    // A dry run answers the same and deletes nothing.
    const dry = await remove(admin, l.qc.execution.id, { dry_run: 'true' });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toEqual({
      ...expected,
      message: 'Dry run: nothing was deleted; these records would be',
      dry_run: true,
    });
    expect((await request(t.app).get(`/nmdcschema/ids/${l.annotation.id}`)).status).toBe(200);

    const res = await remove(admin, l.qc.execution.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(expected);

    for (const id of [...expected.deleted_workflow_execution_ids, ...expected.deleted_data_object_ids])
      expect((await request(t.app).get(`/nmdcschema/ids/${id}`)).status, id).toBe(404);
    expect(await l.aggregates(l.annotation.id)).toEqual([]);
    for (const job of [l.jobs.qc, l.jobs.annotation])
      expect(await t.store.getById('jobs', job.id)).toBeNull();
    // The inputs, and what did not descend from the execution, stay.
    for (const id of [rawReads.id, l.unrelated.id, l.otherOutput.id])
      expect((await request(t.app).get(`/nmdcschema/ids/${id}`)).status, id).toBe(200);
    expect(await l.aggregates(l.unrelated.id)).toHaveLength(1);
    expect(await t.store.getById('jobs', l.jobs.unrelated.id)).not.toBeNull();

    // Search and the provenance graph forget them in the same write.
    const searched = await request(t.app)
      .get('/data_objects')
      .query({ filter: `name.search:${word}` });
    expect(searched.body.results.map((d: Doc) => d.id)).toEqual([l.otherOutput.id]);
    const linked = await request(t.app)
      .get('/nmdcschema/linked_instances')
      .query({ ids: rawReads.id, types: 'nmdc:WorkflowExecution', max_page_size: 1000 });
    const reached = linked.body.resources.map((r: Doc) => r.id);
    expect(reached).toContain(l.unrelated.id);
    for (const id of expected.deleted_workflow_execution_ids) expect(reached).not.toContain(id);

    // It is gone: a second delete is a 404.
    const again = await remove(admin, l.qc.execution.id);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Workflow execution ${l.qc.execution.id} not found` });
  });

  it('needs the delete allowance (403), which a site client holds under its client_id; 401 without a token', async () => {
    const { execution, outputs, body } = readQcRun(`qcdel${local()}`);
    expect((await post(siteClient, body)).status).toBe(200);
    const forbidden = await remove(siteClient, execution.id);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({
      detail: 'Only specific users are allowed to issue update and delete commands.',
    });
    const dryForbidden = await remove(siteClient, execution.id, { dry_run: 'true' });
    expect(dryForbidden.status).toBe(403);
    expect((await remove({}, execution.id)).status).toBe(401);
    expect((await request(t.app).get(`/nmdcschema/ids/${execution.id}`)).status).toBe(200);

    const granted = await request(t.app)
      .post('/admin/allowances')
      .set(admin)
      .send({ username: siteClientId, action: '/queries:run(query_cmd:DeleteCommand)' });
    expect(granted.status, granted.text).toBe(201);
    const res = await remove(siteClient, execution.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.deleted_workflow_execution_ids).toEqual([execution.id]);
    expect(res.body.deleted_data_object_ids).toEqual(outputs.map((o) => o.id));
    expect(res.body.deleted_functional_annotation_agg_oids).toEqual([]);
    expect(res.body.deleted_job_ids).toEqual([]);
  });

  it('answers hostile ids and a malformed dry_run with a 4xx and a detail', async () => {
    for (const id of ['x'.repeat(10_000), encodeURIComponent('nmdc:a/b\u0000é'), '(a+)+$']) {
      const res = await remove(admin, id);
      expect(res.status, id.slice(0, 40)).toBe(404);
      expect(res.body.detail).toMatch(/^Workflow execution .* not found$/s);
    }
    // A path that is not valid percent-encoded UTF-8.
    const undecodable = await remove(admin, 'nmdc:wfmgan-11-%ff.1');
    expect(undecodable.status).toBeGreaterThanOrEqual(400);
    expect(undecodable.status).toBeLessThan(500);
    expect(typeof undecodable.body.detail).toBe('string');
    const dry = await remove(admin, 'nmdc:wfmgan-11-x.1', { dry_run: 'banana' });
    expect(dry.status).toBe(422);
    expect(dry.body.detail).toMatch(/dry_run/);
  });

  it('answers 404 for an unknown id, naming it', async () => {
    const id = 'nmdc:wfmgan-00-nonexistent.1';
    const res = await remove(admin, id);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Workflow execution ${id} not found` });
    expect((await remove(admin, id, { dry_run: 'true' })).status).toBe(404);
  });

  it('deletes nothing when the write fails, or when the execution went or changed between the reads and the write', async () => {
    const l = await lineage(`atomic${local()}`);
    const original = t.store.writeIfUnchanged!.bind(t.store);
    const stays = [l.qc.execution.id, l.assembly.id, l.annotation.id, l.contigs.id];
    const unchanged = async () => {
      for (const id of stays)
        expect((await request(t.app).get(`/nmdcschema/ids/${id}`)).status, id).toBe(200);
      expect(await l.aggregates(l.annotation.id)).toHaveLength(2);
    };
    /** `meanwhile` runs just before the deletion's write. */
    const racing = async (meanwhile: () => Promise<unknown>) => {
      t.store.writeIfUnchanged = async (change) => {
        await meanwhile();
        return original(change);
      };
      try {
        return await remove(admin, l.qc.execution.id);
      } finally {
        t.store.writeIfUnchanged = original;
      }
    };

    const failed = await racing(async () => {
      throw new Error('the store went away');
    });
    expect(failed.status).toBe(500);
    await unchanged();

    // Another request changes the execution after this one worked out the cascade: 409.
    const changed = await racing(() =>
      t.store.upsertMany('workflow_execution_set', [{ ...l.qc.execution, name: 'renamed meanwhile' }]),
    );
    expect(changed.status).toBe(409);
    expect(changed.body).toEqual({
      detail: `Workflow execution ${l.qc.execution.id} changed while its dependents were worked out; nothing was deleted: run it again`,
    });
    await unchanged();

    // Another request deletes it: 404, and the rest of the cascade stays.
    const gone = await racing(() => t.store.deleteMany('workflow_execution_set', { id: l.qc.execution.id }));
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `Workflow execution ${l.qc.execution.id} not found` });
    for (const id of stays.slice(1))
      expect((await request(t.app).get(`/nmdcschema/ids/${id}`)).status, id).toBe(200);
    expect(await l.aggregates(l.annotation.id)).toHaveLength(2);
  });

  it('deletes a cascade of 1,000 records or more on the writing thread', async () => {
    const l = await lineage(`many${local()}`);
    const members = Array.from({ length: 1500 }, (_, i) => ({
      was_generated_by: l.annotation.id,
      gene_function_id: `KEGG.ORTHOLOGY:K${String(i).padStart(5, '0')}`,
      count: i,
      type: 'nmdc:FunctionalAnnotationAggMember',
    }));
    await writer().upsertAll([{ collection: 'functional_annotation_agg', docs: members }]);
    const before = (t.store as SqliteDocumentStore).counters.writesOnThread;
    const res = await remove(admin, l.annotation.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.deleted_workflow_execution_ids).toEqual([l.annotation.id]);
    expect(res.body.deleted_functional_annotation_agg_oids).toHaveLength(1502);
    expect((t.store as SqliteDocumentStore).counters.writesOnThread).toBe(before + 1);
    expect(await l.aggregates(l.annotation.id)).toEqual([]);
    expect(await t.store.getById('workflow_execution_set', l.annotation.id)).toBeNull();
    expect(await l.aggregates(l.unrelated.id)).toHaveLength(1);
  });
});
