/**
 * The workflow catalog: the seed set at start, an administrator's WORKFLOW_CATALOG file merged
 * over it by id, start-up refusing a bad file, and the public catalog reads with their 404s.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import YAML from 'yaml';
import { createTestApp, type TestApp } from '../support/server.ts';
import { COLLECTION_NAMES } from '../../src/schema/nmdc.ts';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { openServices } from '../../src/services.ts';
import { openStore } from '../../src/store/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import {
  CAPABILITIES,
  SEED_CATALOG_FILE,
  TRIGGERS,
  WORKFLOWS,
  ensureCatalog,
  triggersForObjectType,
} from '../../src/workflows/catalog.ts';

const seed = YAML.parse(fs.readFileSync(SEED_CATALOG_FILE, 'utf8')) as Record<
  string,
  Array<Record<string, unknown>>
>;
const byId = <T extends { id: string }>(items: T[]) =>
  [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** A catalog file in a fresh temporary folder. */
function catalogFile(content: unknown, name = 'catalog.yaml'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-catalog-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : YAML.stringify(content));
  return file;
}

describe('the seed catalog', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('GET /workflows answers every seed workflow, in id order, with null for an absent description', async () => {
    const res = await request(t.app).get('/workflows');
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((w: { id: string }) => w.id)).toEqual(seed.workflows!.map((w) => w.id).sort());
    expect(res.body.find((w: { id: string }) => w.id === 'metag-1.0.0')).toEqual({
      id: 'metag-1.0.0',
      name: 'Metagenome Analysis Workflow (v1.0.0)',
      description: null,
      capability_ids: [],
      created_at: '2021-08-24T00:00:00Z',
    });
  });

  it('GET /workflows/{workflow_id} answers one workflow, and 404 naming an unknown id', async () => {
    const res = await request(t.app).get('/workflows/metadata-in-1.0.0');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: 'metadata-in-1.0.0',
      name: 'general metadata ETL',
      description: 'Validate and ingest metadata from JSON files',
      capability_ids: [],
      created_at: '2021-10-12T00:00:00Z',
    });
    const missing = await request(t.app).get('/workflows/no-such-workflow');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No workflow with id 'no-such-workflow'" });
  });

  it('GET /capabilities answers one capability per seed workflow (as the original seeds them)', async () => {
    const res = await request(t.app).get('/capabilities');
    expect(res.status).toBe(200);
    expect(res.body.map((c: { id: string }) => c.id)).toEqual(seed.workflows!.map((w) => w.id).sort());
    expect(res.body.find((c: { id: string }) => c.id === 'apply-changesheet-1.0.0')).toEqual({
      id: 'apply-changesheet-1.0.0',
      name: 'apply metadata changesheet',
      description: 'Validate and apply metadata changes from TSV/CSV files',
      created_at: '2021-09-30T00:00:00Z',
    });
  });

  it('GET /capabilities/{capability_id} answers one capability, and 404 naming an unknown id', async () => {
    const res = await request(t.app).get('/capabilities/readqc-1.0.6');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: 'readqc-1.0.6',
      name: 'Reads QC Workflow (v1.0.1)',
      description: null,
      created_at: '2021-06-01T00:00:00Z',
    });
    const missing = await request(t.app).get('/capabilities/gpu');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No capability with id 'gpu'" });
  });

  it('GET /object_types answers the seed types and one per *_set collection of the schema', async () => {
    const res = await request(t.app).get('/object_types');
    expect(res.status).toBe(200);
    const ids = res.body.map((o: { id: string }) => o.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining(['metadata-in', 'metadata-changesheet', 'test']));
    for (const collection of COLLECTION_NAMES.filter((c) => c.endsWith('_set')))
      expect(res.body).toContainEqual({
        id: collection,
        name: collection,
        description: null,
        created_at: '2021-09-14T00:00:00Z',
      });
  });

  it('GET /object_types/{object_type_id} answers one type, ids with "#" and "/" included, and 404 naming an unknown id', async () => {
    const res = await request(t.app).get('/object_types/metadata-in');
    expect(res.body).toEqual({
      id: 'metadata-in',
      name: 'metadata submission',
      description: 'Input to the portal ETL process',
      created_at: '2021-06-01T00:00:00Z',
    });
    const database = await request(t.app).get(
      `/object_types/${encodeURIComponent('schema#/definitions/Database')}`,
    );
    expect(database.status, database.text).toBe(200);
    expect(database.body).toMatchObject({
      id: 'schema#/definitions/Database',
      name: 'Bundle of one or more metadata `*_set`s.',
    });
    const missing = await request(t.app).get('/object_types/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No object type with id 'nope'" });
  });

  it('GET /object_types/{object_type_id}/workflows answers the workflows its triggers start', async () => {
    const res = await request(t.app).get('/object_types/read_qc_analysis_activity_set/workflows');
    expect(res.status).toBe(200);
    expect(res.body.map((w: { id: string }) => w.id)).toEqual(['mgasm-1.0.3', 'mgrba-1.0.2']);
    const none = await request(t.app).get('/object_types/biosample_set/workflows');
    expect(none.body).toEqual([]);
    const missing = await request(t.app).get('/object_types/nope/workflows');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No object type with id 'nope'" });
  });

  it('GET /workflows/{workflow_id}/object_types answers the types whose triggers start it', async () => {
    const res = await request(t.app).get('/workflows/metag-1.0.0/object_types');
    expect(res.status).toBe(200);
    expect(res.body.map((o: { id: string }) => o.id)).toEqual([
      'metagenome_raw_paired_end_reads',
      'metagenome_sequencing_activity_set',
    ]);
    const missing = await request(t.app).get('/workflows/nope/object_types');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No workflow with id 'nope'" });
  });

  it('GET /workflows/{workflow_id}/capabilities answers none for a seed workflow, and 404 for an unknown one', async () => {
    const res = await request(t.app).get('/workflows/metag-1.0.0/capabilities');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const missing = await request(t.app).get('/workflows/nope/capabilities');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No workflow with id 'nope'" });
  });

  it('GET /triggers answers the original seed triggers with ids <object_type_id>--<workflow_id>', async () => {
    const res = await request(t.app).get('/triggers');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(seed.triggers!.length);
    expect(res.body.map((x: { id: string }) => x.id)).toEqual(
      seed.triggers!.map((x) => `${x.object_type_id}--${x.workflow_id}`).sort(),
    );
    expect(res.body).toContainEqual({
      id: 'metadata-changesheet--apply-changesheet-1.0.0',
      object_type_id: 'metadata-changesheet',
      workflow_id: 'apply-changesheet-1.0.0',
      created_at: '2021-09-30T00:00:00Z',
    });
  });

  it('GET /triggers/{trigger_id} answers one trigger, and 404 naming an unknown id', async () => {
    const res = await request(t.app).get('/triggers/test--test');
    expect(res.body).toEqual({
      id: 'test--test',
      object_type_id: 'test',
      workflow_id: 'test',
      created_at: '2021-09-09T00:00:00Z',
    });
    const missing = await request(t.app).get('/triggers/test--nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "No trigger with id 'test--nope'" });
  });

  it('every seed trigger names a workflow and an object type the catalog holds', async () => {
    const workflows = new Set((await t.store.find(WORKFLOWS, {})).map((w) => w.id));
    const types = new Set((await request(t.app).get('/object_types')).body.map((o: { id: string }) => o.id));
    for (const trigger of await t.store.find(TRIGGERS, {})) {
      expect(workflows).toContain(trigger.workflow_id);
      expect(types).toContain(trigger.object_type_id);
    }
    expect((await triggersForObjectType(t.store, 'test')).map((x) => x.id)).toEqual(['test--test']);
  });
});

describe('an administrator catalog (WORKFLOW_CATALOG)', () => {
  let t: TestApp;
  const extra = {
    capabilities: [{ id: 'gpu', name: 'A GPU node', description: 'CUDA 12' }],
    workflows: [
      { id: 'metag-1.0.0', capability_ids: ['gpu', 'metag-1.0.0'] },
      { id: 'assembly-gpu-2.0.0', name: 'GPU assembly', capability_ids: ['gpu'] },
    ],
    object_types: [{ id: 'gpu-reads', name: 'Reads for GPU assembly' }],
    triggers: [{ object_type_id: 'gpu-reads', workflow_id: 'assembly-gpu-2.0.0' }],
  };
  let file: string;

  beforeAll(async () => {
    file = catalogFile(extra);
    t = await createTestApp({ WORKFLOW_CATALOG: file });
  });
  afterAll(async () => t.close());

  it('adds its entries and changes only the fields it gives of seed entries', async () => {
    const metag = await request(t.app).get('/workflows/metag-1.0.0');
    expect(metag.body).toEqual({
      id: 'metag-1.0.0',
      name: 'Metagenome Analysis Workflow (v1.0.0)',
      description: null,
      capability_ids: ['gpu', 'metag-1.0.0'],
      created_at: '2021-08-24T00:00:00Z',
    });
    const caps = await request(t.app).get('/workflows/metag-1.0.0/capabilities');
    expect(caps.body.map((c: { id: string }) => c.id)).toEqual(['gpu', 'metag-1.0.0']);
    expect((await request(t.app).get('/capabilities/gpu')).body).toEqual({
      id: 'gpu',
      name: 'A GPU node',
      description: 'CUDA 12',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const started = await request(t.app).get('/object_types/gpu-reads/workflows');
    expect(started.body).toEqual([
      {
        id: 'assembly-gpu-2.0.0',
        name: 'GPU assembly',
        description: null,
        capability_ids: ['gpu'],
        created_at: expect.any(String),
      },
    ]);
    expect((await request(t.app).get('/triggers/gpu-reads--assembly-gpu-2.0.0')).status).toBe(200);
    // The seed is all still there.
    expect((await request(t.app).get('/workflows')).body).toHaveLength(seed.workflows!.length + 1);
  });

  it('keeps created_at across restarts and rewrites only what changed', async () => {
    const before = byId(await t.store.find(CAPABILITIES, {}));
    const again = await ensureCatalog(t.store, file);
    expect(Object.values(again).map((c) => c.written)).toEqual([0, 0, 0, 0]);
    expect(byId(await t.store.find(CAPABILITIES, {}))).toEqual(before);

    const edited = catalogFile({ ...extra, capabilities: [{ id: 'gpu', name: 'Two GPUs' }] });
    const counts = await ensureCatalog(t.store, edited);
    expect(counts.capabilities).toEqual({ entries: seed.capabilities!.length + 1, written: 1 });
    const gpu = (await t.store.getById(CAPABILITIES, 'gpu'))!;
    // The file wins on the fields it gives; created_at stays the first one.
    expect(gpu).toEqual({
      ...before.find((c) => c.id === 'gpu'),
      name: 'Two GPUs',
      description: null,
    });
  });

  it('reads a JSON file too', async () => {
    const json = catalogFile(
      JSON.stringify({ object_types: [{ id: 'json-type', name: 'From JSON' }] }),
      'c.json',
    );
    await ensureCatalog(t.store, json);
    const res = await request(t.app).get('/object_types/json-type');
    expect(res.body).toMatchObject({ id: 'json-type', name: 'From JSON', description: null });
  });
});

describe('start-up with a bad WORKFLOW_CATALOG', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    [
      'a trigger naming an unknown workflow',
      { triggers: [{ object_type_id: 'test', workflow_id: 'no-such-wf' }] },
      /triggers\[0\] \(test--no-such-wf\): names an unknown workflow 'no-such-wf'/,
    ],
    [
      'a trigger naming an unknown object type',
      { triggers: [{ object_type_id: 'nope', workflow_id: 'test' }] },
      /triggers\[0\] \(nope--test\): names an unknown object type 'nope'/,
    ],
    [
      'a workflow naming unknown capabilities',
      { workflows: [{ id: 'w', capability_ids: ['test', 'x', 'y'] }] },
      /workflows\[0\] \(w\): names unknown capabilities: x, y/,
    ],
    ['an unknown section', { jobs: [] }, /unknown section 'jobs'/],
    [
      'a misspelt field',
      { workflows: [{ id: 'w', capabilities_ids: [] }] },
      /workflows\[0\] \(w\): unknown field 'capabilities_ids'/,
    ],
    [
      'an entry without id',
      { capabilities: [{ name: 'x' }] },
      /capabilities\[0\]: id must be a non-empty string/,
    ],
    [
      'an id given twice',
      { capabilities: [{ id: 'a' }, { id: 'a' }] },
      /capabilities\[1\] \(a\): the id 'a' appears twice in capabilities/,
    ],
    [
      'a date without a time zone',
      { capabilities: [{ id: 'a', created_at: '2021-01-01' }] },
      /capabilities\[0\] \(a\): created_at must be a date-time with a time zone/,
    ],
    ['text that is not YAML', 'workflows: [\n', /is neither YAML nor JSON/],
    ['a list at the top', '- a\n', /must be a mapping of capabilities, workflows, object_types, triggers/],
  ];

  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  for (const [what, content, message] of cases) {
    it(`is refused with a message naming the variable, the file and the entry: ${what}`, async () => {
      const file = catalogFile(content);
      const loaded = ensureCatalog(t.store, file);
      await expect(loaded).rejects.toBeInstanceOf(ConfigError);
      await expect(loaded).rejects.toThrow(message);
      await expect(loaded).rejects.toThrow(`WORKFLOW_CATALOG: ${file}: `);
    });
  }

  it('is refused when the file cannot be read', async () => {
    const file = path.join(os.tmpdir(), 'nmdc-no-such-catalog.yaml');
    await expect(ensureCatalog(t.store, file)).rejects.toThrow(`WORKFLOW_CATALOG: ${file}: cannot be read`);
  });

  it('stops the app from being built, with nothing of the file written', async () => {
    const file = catalogFile({
      workflows: [{ id: 'half-written' }],
      triggers: [{ object_type_id: 'test', workflow_id: 'no-such-wf' }],
    });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-catalog-start-'));
    const config = loadConfig({ DEMO_DATA: 'false', DATA_DIR: dataDir, WORKFLOW_CATALOG: file });
    const logger = pino({ level: 'silent' });
    const store = await openStore(config, logger);
    const searchIndex = await openSearchIndex(config, store, logger);
    const edgeIndex = await openEdgeIndex(config, store, logger);
    try {
      await expect(
        openServices(config, logger, { adapters: { store, searchIndex, edgeIndex } }),
      ).rejects.toThrow(
        `WORKFLOW_CATALOG: ${file}: triggers[0] (test--no-such-wf): names an unknown workflow 'no-such-wf'`,
      );
      expect(await store.getById(WORKFLOWS, 'half-written')).toBeNull();
    } finally {
      await edgeIndex.close();
      await searchIndex.close();
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
