import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { SCHEMA_VERSION } from '../../src/schema/nmdc.ts';
import { SERVICE_VERSION } from '../../src/version.ts';
import * as sdk213 from '../../generated/sdk-2.13.0/index.ts';
import * as sdk120 from '../../generated/sdk-1.2.0/index.ts';

const ADMIN = { username: 'sdk-admin', password: 'sdk-admin-password-1' };
const BIOSAMPLES = 57;

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  const biosamples = Array.from({ length: BIOSAMPLES }, (_, i) => ({
    id: `nmdc:bsm-11-s${String(i).padStart(4, '0')}`,
    type: 'nmdc:Biosample',
    name: `Soil core ${i}`,
    ecosystem_category: i % 3 === 0 ? 'Plants' : 'Terrestrial',
  }));
  const processes = [
    { id: 'nmdc:wfmgas-11-sdk001', type: 'nmdc:MetagenomeAssembly', name: 'Assembly 1' },
    { id: 'nmdc:wfmgas-11-sdk002', type: 'nmdc:MetagenomeAssembly', name: 'Assembly 2' },
    { id: 'nmdc:wfmgas-11-sdk003', type: 'nmdc:MetagenomeAssembly', name: 'Assembly 3' },
  ];
  await server.store.upsertMany('biosample_set', biosamples);
  await server.searchIndex.index('biosample_set', biosamples);
  await server.store.upsertMany('workflow_execution_set', processes);
  await server.searchIndex.index('workflow_execution_set', processes);
});
afterAll(async () => server?.close());

const plantIds = () =>
  Array.from({ length: BIOSAMPLES }, (_, i) => i)
    .filter((i) => i % 3 === 0)
    .map((i) => `nmdc:bsm-11-s${String(i).padStart(4, '0')}`);

// The operations used below exist with the same shapes in both versions; the 1.2.0-only names are
// type-checked in their own tests further down.
const factories: Array<[string, typeof sdk213.createNmdcClient]> = [
  ['2.13.0', sdk213.createNmdcClient],
  ['1.2.0', sdk120.createNmdcClient as unknown as typeof sdk213.createNmdcClient],
];

describe.each(factories)('the generated %s SDK', (_version, createNmdcClient) => {
  it('reads the service, schema and API versions', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const { data, error, response } = await nmdc.getVersion();
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data).toEqual({ 'nmdc-runtime': SERVICE_VERSION, 'nmdc-schema': SCHEMA_VERSION, api: '2.13.0' });
  });

  it('reads liveness with the engines in use', async () => {
    const nmdc = createNmdcClient({ baseUrl: `${server.url}/` });
    const { data } = await nmdc.getHealth();
    expect(data).toEqual({
      status: 'ok',
      web_server: true,
      database: true,
      store: 'sqlite',
      search_index: 'sqlite-fts5',
      collections: 2,
    });
  });

  it('reads the schema version as a string', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const { data } = await nmdc.getSchemaVersion();
    expect(data).toBe(SCHEMA_VERSION);
  });

  it('logs in with a password and calls a private operation with the token', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const anonymous = await nmdc.getCurrentUser();
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.error).toEqual({ detail: expect.stringContaining('Access token') });

    const login = await nmdc.login({ body: { grant_type: 'password', ...ADMIN } });
    expect(login.data).toMatchObject({ token_type: 'bearer', expires: { days: expect.any(Number) } });
    nmdc.setToken(login.data!.access_token);
    const me = await nmdc.getCurrentUser();
    expect(me.data).toMatchObject({ username: ADMIN.username, site_admin: expect.arrayContaining([]) });
    expect(me.data).not.toHaveProperty('password');

    const withToken = createNmdcClient({ baseUrl: server.url, token: login.data!.access_token });
    const query = await withToken.runQuery({
      body: {
        find: 'biosample_set',
        filter: { ecosystem_category: 'Plants' },
        projection: { name: 1 },
        limit: 2,
      },
    });
    expect(query.data).toMatchObject({
      ok: 1,
      cursor: { firstBatch: [{ id: plantIds()[0], name: 'Soil core 0' }, { id: plantIds()[1] }] },
    });
  });

  it('returns the {detail} body of an error with its status', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const { data, error, response } = await nmdc.getRecordById({ path: { doc_id: 'nmdc:bsm-11-absent' } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(404);
    expect(error).toEqual({ detail: 'Not found' });
  });

  it('pages through every match of a compact find with the cursor', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const ids: string[] = [];
    for await (const biosample of nmdc.paginate('findBiosamples', {
      query: { filter: 'ecosystem_category:Plants', per_page: 4, page: 3 },
    })) {
      ids.push(biosample.id);
    }
    expect(ids).toEqual(plantIds());
  });

  it('pages through a collection query with page tokens', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const names: unknown[] = [];
    for await (const record of nmdc.paginate('listCollectionRecords', {
      path: { collection_name: 'biosample_set' },
      query: { filter: '{"ecosystem_category": "Terrestrial"}', projection: 'name', max_page_size: 5 },
    })) {
      expect(Object.keys(record).sort()).toEqual(['id', 'name']);
      names.push(record.name);
    }
    expect(names).toHaveLength(BIOSAMPLES - plantIds().length);
    expect(new Set(names).size).toBe(names.length);
  });

  it("creates and reads sites, and pages through the caller's sites with page tokens", async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const login = await nmdc.login({ body: { grant_type: 'password', ...ADMIN } });
    nmdc.setToken(login.data!.access_token);
    const prefix = `sdk-${_version.replace(/\./g, '-')}`;
    const created = [`${prefix}-b`, `${prefix}-a`, `${prefix}-c`];
    for (const id of created) {
      const site = await nmdc.createSite({ body: { id, capability_ids: ['gpu'] } });
      expect(site.data).toEqual({ id, capability_ids: ['gpu'] });
    }
    const one = await nmdc.getSite({ path: { site_id: `${prefix}-a` } });
    expect(one.data).toEqual({ id: `${prefix}-a`, capability_ids: ['gpu'] });

    const seen: string[] = [];
    for await (const site of nmdc.paginate('listSites', {
      query: { filter: JSON.stringify({ id: { $regex: `^${prefix}-` } }), max_page_size: 2 },
    })) {
      expect(site).toEqual({ id: site.id, capability_ids: ['gpu'] });
      seen.push(site.id);
    }
    expect(seen).toEqual([...created].sort());
  });

  it('stops paging with an error that carries the detail', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const pages = nmdc.paginate('findBiosamples', { query: { filter: 'no-colon-here' } });
    await expect(pages.next()).rejects.toMatchObject({
      name: 'NmdcRequestError',
      status: 400,
      detail: 'Filter must be of form: attribute:spec[,attribute:spec]*',
    });
  });
});

describe('planned processes by API version', () => {
  it('are findPlannedProcesses in 2.13.0', async () => {
    const nmdc = sdk213.createNmdcClient({ baseUrl: server.url });
    const ids: string[] = [];
    for await (const p of nmdc.paginate('findPlannedProcesses', { query: { per_page: 2 } })) ids.push(p.id);
    expect(ids).toEqual(['nmdc:wfmgas-11-sdk001', 'nmdc:wfmgas-11-sdk002', 'nmdc:wfmgas-11-sdk003']);
    const one = await nmdc.getPlannedProcess({ path: { planned_process_id: 'nmdc:wfmgas-11-sdk002' } });
    expect(one.data).toMatchObject({ id: 'nmdc:wfmgas-11-sdk002', name: 'Assembly 2' });
  });

  it('are findActivities at /activities in 1.2.0, with the same records', async () => {
    const nmdc = sdk120.createNmdcClient({ baseUrl: server.url });
    const { data } = await nmdc.findActivities({ query: { per_page: 2 } });
    expect(data?.meta).toMatchObject({ count: 3, page: 1, per_page: 2 });
    expect(data?.results.map((r) => r.id)).toEqual(['nmdc:wfmgas-11-sdk001', 'nmdc:wfmgas-11-sdk002']);
    const one = await nmdc.getActivity({ path: { activity_id: 'nmdc:wfmgas-11-sdk003' } });
    expect(one.data).toMatchObject({ id: 'nmdc:wfmgas-11-sdk003', name: 'Assembly 3' });
    expect(nmdc).not.toHaveProperty('findPlannedProcesses');
    expect(nmdc).not.toHaveProperty('listCollectionNames');
  });
});

describe('the provenance graph through the SDKs', () => {
  const study = { id: 'nmdc:sty-11-sdkgraph', type: 'nmdc:Study', name: 'SDK lineage' };
  const samples = ['a', 'b', 'c'].map((k) => ({
    id: `nmdc:bsm-11-sdkg${k}`,
    type: 'nmdc:Biosample',
    associated_studies: [study.id],
  }));
  const runs = samples.map((s, i) => ({
    id: `nmdc:dgns-11-sdkg${i}`,
    type: 'nmdc:NucleotideSequencing',
    has_input: [s.id],
    has_output: [`nmdc:dobj-11-sdkg${i}r`, `nmdc:dobj-11-sdkg${i}s`],
  }));
  const files = runs.flatMap((r) =>
    (r.has_output as string[]).map((id) => ({ id, type: 'nmdc:DataObject', name: `${id}.fastq.gz` })),
  );
  beforeAll(async () => {
    await server.store.upsertMany('study_set', [study]);
    await server.store.upsertMany('biosample_set', samples);
    await server.store.upsertMany('data_generation_set', runs);
    await server.store.upsertMany('data_object_set', files);
  });

  it('pages through linked instances with tokens in 2.13.0, keeping ids and types', async () => {
    const nmdc = sdk213.createNmdcClient({ baseUrl: server.url });
    const seen: Array<{ id: string; _downstream_of?: string[] }> = [];
    for await (const r of nmdc.paginate('getLinkedInstances', {
      query: { ids: [study.id], types: ['nmdc:DataObject', 'nmdc:PlannedProcess'], max_page_size: 4 },
    }))
      seen.push(r);
    expect(seen.map((r) => r.id)).toEqual([...runs, ...files].map((r) => r.id).sort());
    for (const r of seen) expect(r._downstream_of).toEqual([study.id]);
    expect(sdk120.createNmdcClient({ baseUrl: server.url })).not.toHaveProperty('getLinkedInstances');
  });

  it.each(factories)('reads data objects by study in %s', async (_v, createNmdcClient) => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const { data } = await nmdc.getDataObjectsForStudy({ path: { study_id: study.id } });
    expect(data).toEqual(
      samples.map((s, i) => ({
        biosample_id: s.id,
        data_objects: files.filter((f) => f.id.includes(`sdkg${i}`)),
      })),
    );
  });
});

// Last: the submission adds a collection, which the liveness answers above count.
describe.each(factories)('metadata management through the generated %s SDK', (_version, createNmdcClient) => {
  it('validates and submits metadata, reads the run, and lists the allowance actions', async () => {
    const nmdc = createNmdcClient({ baseUrl: server.url });
    const id = `nmdc:dobj-11-sdk${_version.replace(/\./g, '')}`;
    const record = {
      id,
      type: 'nmdc:DataObject',
      name: 'contigs.fna',
      description: 'Assembled contigs',
      data_category: 'processed_data',
      data_object_type: 'Assembly Contigs',
    };
    const valid = await nmdc.validateJson({ body: { data_object_set: [record] } });
    expect(valid.data).toEqual({ result: 'All Okay!' });
    const invalid = await nmdc.validateJson({ body: { data_object_set: [{ id, type: 'nmdc:DataObject' }] } });
    expect(invalid.data).toMatchObject({ result: 'errors', detail: { data_object_set: expect.any(Array) } });

    const login = await nmdc.login({ body: { grant_type: 'password', ...ADMIN } });
    nmdc.setToken(login.data!.access_token);
    const submitted = await nmdc.submitJson({ body: { data_object_set: [record] } });
    expect(submitted.error).toBeUndefined();
    expect(submitted.data).toEqual({ type: 'success', detail: { run_id: expect.any(String) } });
    const run = await nmdc.getRun({ path: { run_id: submitted.data!.detail.run_id } });
    expect(run.data).toMatchObject({ id: submitted.data!.detail.run_id, status: 'COMPLETE' });
    const found = await nmdc.getDataObject({ path: { data_object_id: id } });
    expect(found.data).toMatchObject(record);
    if (_version === '2.13.0') {
      const actions = await (
        nmdc as typeof nmdc & { listAllowanceActions: typeof nmdc.getVersion }
      ).listAllowanceActions();
      expect(actions.data).toContain('/metadata/json:submit');
    }
  });
});
