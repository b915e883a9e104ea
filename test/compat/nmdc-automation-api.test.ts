/**
 * nmdc_automation (NMDC workflow automation), nmdc_automation/api/nmdcapi.py: the `NmdcRuntimeApi`
 * calls that reach endpoints the service has, and the scheduler and importer code that makes them
 * (workflow_automation/workflow_process.py, workflow_automation/sched.py,
 * import_automation/import_mapper.py). Each request is the one the client prepares, headers and
 * body included; expected answers come from the store.
 */
import { Allowances } from '../../src/accounts/allowances.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { SEEDED, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { jsonDumps, requestsQuery } from './support/python.ts';
import {
  DG_ALLOWLISTED,
  DG_IMPORT,
  DG_MAIN,
  DG_MAIN_READS,
  OTHER_POOL_STUDY,
  POOL_MANIFEST,
  POOL_STUDY,
  RUN_MANIFEST,
} from './support/nmdc-automation-records.ts';
import {
  FRESH_HEADERS,
  authedHeaders,
  byId,
  idsOf,
  listFromCollection,
  postToken,
  runQuery,
  tokenForm,
  withoutMongoId,
  type Crawl,
  startAutomationServer,
  storeWhere as docsWhere,
  has,
} from './support/nmdc-automation-client.ts';

let server: CompatServer;
/** The token `NmdcRuntimeApi.get_token` obtains with the site's client credentials. */
let siteToken: string;
/** A runtime administrator's token: the principal our service lets run aggregate and update. */
let adminToken: string;

beforeAll(async () => {
  ({ server, siteToken, adminToken } = await startAutomationServer());
});
afterAll(async () => server?.close());

const storeWhere = (collection: string, keep?: (d: Doc) => boolean) => docsWhere(server, collection, keep);

/** A crawl that ended well: every page 200 with a JSON body, the last without a token. */
function expectCompleteCrawl(run: Crawl, pageSize: number): void {
  for (const [i, page] of run.pages.entries()) {
    expect(page.status, page.text).toBe(200);
    expect(page.headers['content-type']).toMatch(/^application\/json/);
    const last = i === run.pages.length - 1;
    expect(Object.keys(page.json).sort()).toEqual(last ? ['resources'] : ['next_page_token', 'resources']);
    if (!last) expect(page.json.resources).toHaveLength(pageSize);
  }
  // Every record once.
  expect(new Set(idsOf(run.records)).size).toBe(run.records.length);
}

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.get_token', () => {
  it('NmdcRuntimeApi.get_token: POST /token with the client-credentials form and a form Content-Type', async () => {
    // The form exactly as the client encodes its site configuration's credentials.
    expect(tokenForm('sys0wd8xvz95', 's3cr3t-Value_1')).toBe(
      'grant_type=client_credentials&client_id=sys0wd8xvz95&client_secret=s3cr3t-Value_1',
    );
    const res = await postToken(
      server.url,
      tokenForm(server.siteClient.client_id, server.siteClient.client_secret),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const minutes = Math.floor(server.config.tokenTtlSeconds / 60);
    expect(res.json).toEqual({
      access_token: expect.any(String),
      token_type: 'bearer',
      expires: {
        days: Math.floor(minutes / 1440),
        hours: Math.floor((minutes % 1440) / 60),
        minutes: minutes % 60,
      },
    });
    // The client sums days, hours and minutes; its integration test wants a day, at least an hour.
    const { days, hours, minutes: mins } = res.json.expires;
    expect(days).toBe(1);
    expect(days * 86400 + hours * 3600 + mins * 60).toBeGreaterThanOrEqual(3600);
    // The token acts for the site client: /queries:run accepts it.
    const run = await runQuery(server.url, res.json.access_token, { find: 'study_set', filter: {} });
    expect(run.responses[0]!.status, run.responses[0]!.text).toBe(200);
    expect(idsOf(byId(run.results))).toEqual(idsOf(await storeWhere('study_set')));
  });

  it('NmdcRuntimeApi.get_token with a wrong secret needing form encoding (@ space / + & = %): 401 JSON, which the client raises on', async () => {
    expect(tokenForm('sys0wd8xvz95', 'p@ss w/rd+&=%')).toBe(
      'grant_type=client_credentials&client_id=sys0wd8xvz95&client_secret=p%40ss+w%2Frd%2B%26%3D%25',
    );
    const res = await postToken(server.url, tokenForm(server.siteClient.client_id, 'p@ss w/rd+&=%'));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.json).toEqual({ detail: 'Incorrect client_id or client_secret' });
  });
});

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.list_from_collection', () => {
  it('NmdcRuntimeApi.list_from_collection("data_object_set") on a fresh client: max_page_size=100, page_token appended, every record once', async () => {
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'data_object_set');
    expect(run.targets[0]).toBe('/nmdcschema/data_object_set?max_page_size=100');
    const all = await storeWhere('data_object_set');
    expect(all.length).toBeGreaterThan(200);
    expect(run.pages).toHaveLength(Math.ceil(all.length / 100));
    expectCompleteCrawl(run, 100);
    // Later pages keep every param and add the token, URL-encoded, after them.
    for (const [i, target] of run.targets.slice(1).entries()) {
      expect(target).toBe(
        `/nmdcschema/data_object_set?${requestsQuery([
          ['max_page_size', 100],
          ['page_token', run.pages[i]!.json.next_page_token],
        ])}`,
      );
    }
    expect(run.records).toEqual(all);
  });

  it('workflow_process.get_required_data_objects_map -> list_from_collection: data_object_type $in, max=1000', async () => {
    const types = [
      'Metagenome Raw Reads',
      'Metagenome Raw Read 1',
      'Metagenome Raw Read 2',
      'Filtered Sequencing Reads',
      'Assembly Contigs',
    ];
    const run = await listFromCollection(
      server.url,
      FRESH_HEADERS,
      'data_object_set',
      { data_object_type: { $in: types } },
      undefined,
      1000,
    );
    expect(run.targets).toEqual([
      '/nmdcschema/data_object_set?max_page_size=1000&filter=%7B%22data_object_type%22%3A+%7B%22%24in%22%3A+%5B%22Metagenome+Raw+Reads%22%2C+%22Metagenome+Raw+Read+1%22%2C+%22Metagenome+Raw+Read+2%22%2C+%22Filtered+Sequencing+Reads%22%2C+%22Assembly+Contigs%22%5D%7D%7D',
    ]);
    expectCompleteCrawl(run, 1000);
    const expected = await storeWhere('data_object_set', (d) => types.includes(d.data_object_type as string));
    expect(expected.length).toBeGreaterThan(50);
    expect(byId(run.records)).toEqual(expected);
  });

  it('workflow_process.get_current_workflow_process_nodes -> list_from_collection("data_generation_set", {"analyte_category": "metagenome"})', async () => {
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'data_generation_set', {
      analyte_category: 'metagenome',
    });
    expect(run.targets[0]).toBe(
      '/nmdcschema/data_generation_set?max_page_size=100&filter=%7B%22analyte_category%22%3A+%22metagenome%22%7D',
    );
    expectCompleteCrawl(run, 100);
    const expected = await storeWhere('data_generation_set', (d) => d.analyte_category === 'metagenome');
    expect(expected.length).toBeGreaterThan(20);
    expect(byId(run.records)).toEqual(expected);
    expect(idsOf(run.records)).not.toContain('nmdc:omprc-11-mtx00001');
  });

  it('workflow_process.get_current_workflow_process_nodes with an allowlist: analyte_category and id $in', async () => {
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'data_generation_set', {
      analyte_category: 'metagenome',
      id: { $in: [DG_MAIN, DG_ALLOWLISTED] },
    });
    expect(run.targets).toEqual([
      '/nmdcschema/data_generation_set?max_page_size=100&filter=%7B%22analyte_category%22%3A+%22metagenome%22%2C+%22id%22%3A+%7B%22%24in%22%3A+%5B%22nmdc%3Aomprc-11-dfzknb42%22%2C+%22nmdc%3Adgns-11-qmpge038%22%5D%7D%7D',
    ]);
    expectCompleteCrawl(run, 100);
    expect(byId(run.records)).toEqual(
      await storeWhere(
        'data_generation_set',
        (d) => d.analyte_category === 'metagenome' && [DG_MAIN, DG_ALLOWLISTED].includes(d.id),
      ),
    );
    expect(run.records).toHaveLength(2);
  });

  it('workflow_process.get_current_workflow_process_nodes -> list_from_collection("workflow_execution_set", {"git_url": ReadsQC})', async () => {
    const git = 'https://github.com/microbiomedata/ReadsQC';
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'workflow_execution_set', {
      git_url: git,
    });
    expect(run.targets[0]).toBe(
      '/nmdcschema/workflow_execution_set?max_page_size=100&filter=%7B%22git_url%22%3A+%22https%3A%2F%2Fgithub.com%2Fmicrobiomedata%2FReadsQC%22%7D',
    );
    expectCompleteCrawl(run, 100);
    const expected = await storeWhere('workflow_execution_set', (d) => d.git_url === git);
    // The reads QC of every generated sequencing run and of the automation records, and nothing else.
    expect(expected.length).toBeGreaterThan(10);
    expect(new Set(expected.map((w) => w.type))).toEqual(new Set(['nmdc:ReadQcAnalysis']));
    const generated = generateDatabase(SEEDED).data_generation_set!;
    expect(generated.length).toBeGreaterThan(0);
    for (const g of generated)
      expect(
        expected.some((w) => (w.was_informed_by as string[]).includes(g.id)),
        g.id,
      ).toBe(true);
    expect(byId(run.records)).toEqual(expected);
  });

  it('workflow_process.get_current_workflow_process_nodes for a workflow without git_repo: {} is falsy, no filter param at all', async () => {
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'workflow_execution_set', {});
    expect(run.targets[0]).toBe('/nmdcschema/workflow_execution_set?max_page_size=100');
    expectCompleteCrawl(run, 100);
    expect(run.records).toEqual(await storeWhere('workflow_execution_set'));
  });

  it('workflow_process.get_current_workflow_process_nodes with an allowlist: {"was_informed_by": {"$in": [...]}} matches array elements', async () => {
    const run = await listFromCollection(server.url, FRESH_HEADERS, 'workflow_execution_set', {
      was_informed_by: { $in: [DG_MAIN] },
    });
    expect(run.targets).toEqual([
      '/nmdcschema/workflow_execution_set?max_page_size=100&filter=%7B%22was_informed_by%22%3A+%7B%22%24in%22%3A+%5B%22nmdc%3Aomprc-11-dfzknb42%22%5D%7D%7D',
    ]);
    expectCompleteCrawl(run, 100);
    const expected = await storeWhere('workflow_execution_set', has('was_informed_by', DG_MAIN));
    // The two reads QC iterations, the assembly and the pooled reads QC.
    expect(expected).toHaveLength(4);
    expect(byId(run.records)).toEqual(expected);
  });

  it('sched.Scheduler.get_activity_id -> list_from_collection with a token: list-valued equality and the JSON-quoted projection "id, started_at_time"', async () => {
    const run = await listFromCollection(
      server.url,
      authedHeaders(siteToken),
      'workflow_execution_set',
      { was_informed_by: [DG_MAIN], type: 'nmdc:ReadQcAnalysis' },
      'id, started_at_time',
    );
    expect(run.targets).toEqual([
      '/nmdcschema/workflow_execution_set?max_page_size=100&filter=%7B%22was_informed_by%22%3A+%5B%22nmdc%3Aomprc-11-dfzknb42%22%5D%2C+%22type%22%3A+%22nmdc%3AReadQcAnalysis%22%7D&projection=%22id%2C+started_at_time%22',
    ]);
    expectCompleteCrawl(run, 100);
    // Whole-array equality: [DG_MAIN] exactly, not the pooled execution informed by two generations.
    const expected = await storeWhere(
      'workflow_execution_set',
      (d) =>
        JSON.stringify(d.was_informed_by) === JSON.stringify([DG_MAIN]) && d.type === 'nmdc:ReadQcAnalysis',
    );
    expect(idsOf(expected)).toEqual(['nmdc:wfrqc-11-xyz98765.1', 'nmdc:wfrqc-11-xyz98765.2']);
    // The quoted names `"id` and `started_at_time"` name no field: only `id` is left, as in the original.
    expect(byId(run.records)).toEqual(expected.map((d) => ({ id: d.id })));
  });
});

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.run_query and _run_query_single', () => {
  /** The scheduler's manifest query (workflow_process._map_manifest_to_data_objects). */
  const manifestQuery = (manifestId: string) => ({
    aggregate: 'manifest_set',
    pipeline: [
      { $match: { id: manifestId, manifest_category: 'poolable_replicates' } },
      {
        $lookup: {
          from: 'data_object_set',
          localField: 'id',
          foreignField: 'in_manifest',
          as: 'data_objects',
        },
      },
      { $unwind: '$data_objects' },
      { $replaceWith: '$data_objects' },
    ],
  });

  it('NmdcRuntimeApi.run_query with a find command and the site-client token: cursor.batch, getMore with the string id until it is null', async () => {
    const filter = { url: { $regex: '^https://data.microbiomedata.org/data/' } };
    const run = await runQuery(server.url, siteToken, { find: 'data_object_set', filter });
    expect(run.bodies[0]).toBe(
      '{"find": "data_object_set", "filter": {"url": {"$regex": "^https://data.microbiomedata.org/data/"}}}',
    );
    const expected = await storeWhere('data_object_set', (d) =>
      String(d.url ?? '').startsWith('https://data.microbiomedata.org/data/'),
    );
    expect(expected.length).toBeGreaterThan(202);
    // Default find batches of 101; each getMore is just {"getMore": "<id>"}.
    expect(run.responses).toHaveLength(Math.ceil(expected.length / 101));
    for (const [i, res] of run.responses.entries()) {
      expect(res.status, res.text).toBe(200);
      const last = i === run.responses.length - 1;
      expect(res.json).toMatchObject({
        ok: 1,
        cursor: { batch: expect.any(Array), id: last ? null : expect.any(String) },
      });
      if (!last) {
        expect(res.json.cursor.batch).toHaveLength(101);
        expect(run.bodies[i + 1]).toBe(`{"getMore": ${JSON.stringify(res.json.cursor.id)}}`);
      }
    }
    expect(new Set(idsOf(run.results)).size).toBe(run.results.length);
    expect(byId(run.results)).toEqual(expected);
  });

  it('workflow_process._map_manifest_to_data_objects -> run_query with the site-client token: 403, a client without the aggregate allowance raises', async () => {
    const run = await runQuery(server.url, siteToken, manifestQuery(POOL_MANIFEST));
    expect(run.responses).toHaveLength(1);
    expect(run.responses[0]!.status).toBe(403);
    expect(run.responses[0]!.json).toEqual({ detail: expect.stringContaining('aggregate') });
    expect(run.results).toEqual([]);
  });

  it('workflow_process._map_manifest_to_data_objects -> run_query with the site-client token holding the aggregate allowance: every data object of the manifest', async () => {
    const allowance = {
      username: server.siteClient.client_id,
      action: '/queries:run(query_cmd:AggregateCommand)' as const,
    };
    const allowances = new Allowances(server.store);
    await allowances.create(allowance);
    try {
      const run = await runQuery(server.url, siteToken, manifestQuery(POOL_MANIFEST));
      expect(run.responses.map((r) => r.status)).toEqual([200, 200]);
      const expected = await storeWhere('data_object_set', has('in_manifest', POOL_MANIFEST));
      expect(byId(run.results.map(withoutMongoId) as Doc[])).toEqual(expected);
    } finally {
      await allowances.remove(allowance);
    }
  });

  it('workflow_process._map_manifest_to_data_objects -> run_query (aggregate manifest_set, $lookup, $unwind, $replaceWith), then getMore to the end', async () => {
    const command = manifestQuery(POOL_MANIFEST);
    const run = await runQuery(server.url, adminToken, command);
    expect(run.bodies[0]).toBe(
      '{"aggregate": "manifest_set", "pipeline": [{"$match": {"id": "nmdc:manif-11-abc12345", "manifest_category": "poolable_replicates"}}, {"$lookup": {"from": "data_object_set", "localField": "id", "foreignField": "in_manifest", "as": "data_objects"}}, {"$unwind": "$data_objects"}, {"$replaceWith": "$data_objects"}]}',
    );
    const expected = await storeWhere('data_object_set', has('in_manifest', POOL_MANIFEST));
    expect(expected).toHaveLength(30);
    // 25 (the aggregate default batch) then the other 5 through getMore.
    expect(run.responses.map((r) => r.status)).toEqual([200, 200]);
    expect(run.responses[0]!.json).toMatchObject({ ok: 1, cursor: { id: expect.any(String) } });
    expect(run.responses[0]!.json.cursor.batch).toHaveLength(25);
    expect(run.bodies[1]).toBe(jsonDumps({ getMore: run.responses[0]!.json.cursor.id }));
    expect(run.responses[1]!.json).toMatchObject({ ok: 1, cursor: { id: null } });
    expect(run.responses[1]!.json.cursor.batch).toHaveLength(5);
    // The data object records themselves (the client keys them by id).
    expect(new Set(idsOf(run.results)).size).toBe(30);
    expect(byId(run.results.map(withoutMongoId) as Doc[])).toEqual(expected);
  });

  it('workflow_process._map_manifest_to_data_objects for a manifest that is not poolable_replicates: an empty batch and a null id', async () => {
    const run = await runQuery(server.url, adminToken, manifestQuery(RUN_MANIFEST));
    // The manifest exists and has data objects, but the $match on its category leaves nothing.
    expect(await storeWhere('data_object_set', has('in_manifest', RUN_MANIFEST))).toHaveLength(3);
    expect(run.responses).toHaveLength(1);
    expect(run.responses[0]!.status, run.responses[0]!.text).toBe(200);
    expect(run.responses[0]!.json).toMatchObject({ ok: 1, cursor: { batch: [], id: null } });
    expect(run.results).toEqual([]);
  });

  it('workflow_process._map_manifest_to_data_generation_set -> run_query (aggregate data_object_set, $lookup, $unwind, $group on _id with $first, $replaceWith)', async () => {
    const objectIds = idsOf(await storeWhere('data_object_set', has('in_manifest', POOL_MANIFEST)));
    const command = {
      aggregate: 'data_object_set',
      pipeline: [
        { $match: { id: { $in: objectIds } } },
        {
          $lookup: {
            from: 'data_generation_set',
            localField: 'id',
            foreignField: 'has_output',
            as: 'data_generation_set',
          },
        },
        { $unwind: '$data_generation_set' },
        {
          $group: {
            _id: '$data_generation_set._id',
            data_generation_set: { $first: '$data_generation_set' },
          },
        },
        { $replaceWith: '$data_generation_set' },
      ],
    };
    const run = await runQuery(server.url, adminToken, command);
    expect(run.bodies[0]).toMatch(
      /^\{"aggregate": "data_object_set", "pipeline": \[\{"\$match": \{"id": \{"\$in": \["nmdc:dobj-11-mfst0001", /,
    );
    expect(run.responses.map((r) => r.status)).toEqual([200]);
    expect(run.responses[0]!.json).toMatchObject({ ok: 1, cursor: { id: null } });
    // Each generation that output one of the manifest's data objects, once.
    const expected = await storeWhere('data_generation_set', (d) =>
      ((d.has_output as string[] | undefined) ?? []).some((o) => objectIds.includes(o)),
    );
    expect(idsOf(expected)).toEqual([
      'nmdc:omprc-11-pool0001',
      'nmdc:omprc-11-pool0002',
      'nmdc:omprc-11-pool0003',
    ]);
    expect(byId(run.results.map(withoutMongoId) as Doc[])).toEqual(expected);
  });

  it('tests/test_nmdcapi.py test_run_query -> run_query: associated_studies $in, $lookup data objects, $match on an array path with $exists', async () => {
    const studies = [POOL_STUDY, OTHER_POOL_STUDY];
    const command = {
      aggregate: 'data_generation_set',
      pipeline: [
        { $match: { associated_studies: { $in: studies } } },
        {
          $lookup: {
            from: 'data_object_set',
            localField: 'has_output',
            foreignField: 'id',
            as: 'data_object_set',
          },
        },
        { $match: { 'data_object_set.in_manifest': { $exists: true } } },
      ],
    };
    const run = await runQuery(server.url, adminToken, command);
    expect(run.responses.map((r) => r.status)).toEqual([200]);
    const objects = new Map((await storeWhere('data_object_set')).map((d) => [d.id, d]));
    const expected = (
      await storeWhere('data_generation_set', (d) =>
        (d.associated_studies as string[]).some((s) => studies.includes(s)),
      )
    )
      .map((d) => ({
        ...d,
        data_object_set: byId(((d.has_output as string[]) ?? []).flatMap((o) => objects.get(o) ?? [])),
      }))
      .filter((d) => d.data_object_set.some((o) => 'in_manifest' in o));
    expect(idsOf(expected)).toEqual([
      'nmdc:omprc-11-hht5dg01',
      'nmdc:omprc-11-pool0001',
      'nmdc:omprc-11-pool0002',
      'nmdc:omprc-11-pool0003',
    ]);
    const actual = run.results.map((d) => {
      const rest = withoutMongoId(d) as Doc;
      return { ...rest, data_object_set: byId((rest.data_object_set as Doc[]).map(withoutMongoId) as Doc[]) };
    });
    expect(byId(actual)).toEqual(expected);
  });
});

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.find_planned_processes and find_data_objects', () => {
  const PLANNED_PROCESS_COLLECTIONS = [
    'collecting_biosamples_from_site_set',
    'data_generation_set',
    'material_processing_set',
    'storage_process_set',
    'workflow_execution_set',
  ];

  /** Planned processes of every collection that `keep` accepts, in id order. */
  async function plannedProcessesWhere(keep: (d: Doc) => boolean): Promise<Doc[]> {
    const found: Doc[] = [];
    for (const collection of PLANNED_PROCESS_COLLECTIONS) found.push(...(await storeWhere(collection, keep)));
    return byId(found);
  }

  /** `find_planned_processes(filter)`: `k:v` pairs joined by commas, urlencoded beside per_page=100. */
  const plannedProcessesTarget = (filter: Array<[string, string]>) =>
    `/planned_processes?${requestsQuery([
      ['filter', filter.map(([k, v]) => `${k}:${v}`).join(',')],
      ['per_page', 100],
    ])}`;

  const getDataObject = (id: string, headers: Record<string, string> = FRESH_HEADERS) =>
    send(server.url, { method: 'GET', target: `/data_objects/${id}`, headers });

  it("import_mapper.ImportMapper.add_do_mappings_from_data_generation -> find_planned_processes({'id': ...}) on a fresh client, then find_data_objects", async () => {
    const target = '/planned_processes?filter=id%3Anmdc%3Aomprc-12-hgksne68&per_page=100';
    expect(plannedProcessesTarget([['id', DG_IMPORT]])).toBe(target);
    const res = await send(server.url, { method: 'GET', target, headers: FRESH_HEADERS });
    expect(res.status, res.text).toBe(200);
    // The mapper requires exactly one record.
    const generation = (await server.store.getById('data_generation_set', DG_IMPORT))!;
    expect(res.json.results).toEqual([generation]);
    expect(res.json.meta).toMatchObject({ count: 1, page: 1, per_page: 100 });

    // Then the first output, by id inserted raw in the path.
    const outputId = (generation.has_output as string[])[0]!;
    const data = await getDataObject(outputId);
    expect(data.status, data.text).toBe(200);
    expect(data.json).toEqual(await server.store.getById('data_object_set', outputId));
    expect(data.json.data_object_type).toBe('Metagenome Raw Reads');
  });

  it("import_mapper.ImportMapper.add_do_mappings_from_workflow_executions -> find_planned_processes({'was_informed_by': ...}), then find_data_objects for every has_output", async () => {
    const target = '/planned_processes?filter=was_informed_by%3Anmdc%3Aomprc-12-hgksne68&per_page=100';
    expect(plannedProcessesTarget([['was_informed_by', DG_IMPORT]])).toBe(target);
    const res = await send(server.url, { method: 'GET', target, headers: FRESH_HEADERS });
    expect(res.status, res.text).toBe(200);
    // Equality on the array field was_informed_by matches any element.
    const expected = await plannedProcessesWhere(has('was_informed_by', DG_IMPORT));
    expect(idsOf(expected)).toEqual(['nmdc:wfmgas-12-imprt001.1', 'nmdc:wfrqc-12-imprt001.1']);
    expect(byId(res.json.results)).toEqual(expected);
    expect(res.json.meta.count).toBe(expected.length);

    for (const execution of res.json.results as Doc[]) {
      for (const outputId of execution.has_output as string[]) {
        const data = await getDataObject(outputId);
        expect(data.status, data.text).toBe(200);
        expect(data.json).toEqual(await server.store.getById('data_object_set', outputId));
      }
    }
  });

  it("run_import._database_workflow_execution_ids_by_type -> find_planned_processes({'was_informed_by': ..., 'type': ...}) once a token exists", async () => {
    const target =
      '/planned_processes?filter=was_informed_by%3Anmdc%3Aomprc-12-hgksne68%2Ctype%3Anmdc%3AReadQcAnalysis&per_page=100';
    expect(
      plannedProcessesTarget([
        ['was_informed_by', DG_IMPORT],
        ['type', 'nmdc:ReadQcAnalysis'],
      ]),
    ).toBe(target);
    const res = await send(server.url, { method: 'GET', target, headers: authedHeaders(siteToken) });
    expect(res.status, res.text).toBe(200);
    const expected = await plannedProcessesWhere(
      (d) => has('was_informed_by', DG_IMPORT)(d) && d.type === 'nmdc:ReadQcAnalysis',
    );
    expect(idsOf(res.json.results)).toEqual(['nmdc:wfrqc-12-imprt001.1']);
    expect(res.json.results).toEqual(expected);
  });

  it('NmdcRuntimeApi.find_data_objects("nmdc:dobj-11-ngnp0x38") on a fresh client: the record, data_object_type and id as the importer reads them', async () => {
    const res = await getDataObject(DG_MAIN_READS);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(await server.store.getById('data_object_set', DG_MAIN_READS));
    expect(res.json).toMatchObject({ id: DG_MAIN_READS, data_object_type: 'Metagenome Raw Reads' });
  });

  it('NmdcRuntimeApi.find_data_objects for an id the store does not hold: 404 {"detail": "Not found"}, which the client raises on', async () => {
    const missing = 'nmdc:dobj-11-n0tth3re';
    expect(await server.store.getById('data_object_set', missing)).toBeNull();
    const res = await getDataObject(missing, authedHeaders(siteToken));
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ detail: 'Not found' });
  });
});
