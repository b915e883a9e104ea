/**
 * nmdc_automation (NMDC workflow automation): the code outside `NmdcRuntimeApi` that calls the
 * service, either through `NmdcRuntimeApi.run_query` (run_process/run_report.py,
 * run_process/run_import.py) or with `requests` directly (run_report.py, run_process/db_tools.py,
 * data_management/jamo_ingest.py, jgi_file_staging/, wdl/assembly_stats.wdl, the test suite's
 * probes). Each request is the one the client prepares; expected answers come from the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/store/port.ts';
import { SITE_ID, type CompatServer } from './support/server.ts';
import { send } from './support/wire.ts';
import { jsonDumps, requestsQuery } from './support/python.ts';
import {
  ASSEMBLY,
  DG_IMPORT_UPDATE,
  DG_MAIN,
  GOLD_PROPOSAL,
  GOLD_STUDY,
  IMPORTED_OBJECT,
  REPORT_STUDY,
  WF_TYPES,
} from './support/nmdc-automation-records.ts';
import {
  BARE_HEADERS,
  GOLD_HEADERS,
  RAW_BASIC_HEADERS,
  byId,
  crawl,
  idsOf,
  jsonPostHeaders,
  project,
  runQuery,
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

const get = (target: string, headers: Record<string, string>) =>
  send(server.url, { method: 'GET', target, headers });

/** A single-page /nmdcschema answer: 200, `resources` only (no next_page_token). */
function expectOnePage(res: Awaited<ReturnType<typeof get>>): Doc[] {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.json)).toEqual(['resources']);
  return res.json.resources as Doc[];
}

describe('nmdc_automation/run_process/run_report.py', () => {
  /** study_and_analyte + lookup_do_wf_job + manifest_and_qc (defaults) + set_completion_reqs + group_results. */
  function studyReportPipeline(show: 'all' | 'incomplete' | 'complete'): unknown[] {
    const completion: unknown[] = [];
    if (show === 'incomplete') {
      completion.push({
        $match: {
          $or: [
            { $expr: { $lt: [{ $size: '$workflow_execution_set' }, 5] } },
            ...WF_TYPES.map((type) => ({ workflow_execution_set: { $not: { $elemMatch: { type } } } })),
          ],
        },
      });
    } else if (show === 'complete') {
      completion.push({
        $match: {
          $and: [
            { $expr: { $gte: [{ $size: '$workflow_execution_set' }, 5] } },
            ...WF_TYPES.map((type) => ({ workflow_execution_set: { $elemMatch: { type } } })),
          ],
        },
      });
    }
    return [
      { $match: { associated_studies: REPORT_STUDY, analyte_category: 'metagenome' } },
      {
        $lookup: {
          from: 'data_object_set',
          localField: 'has_output',
          foreignField: 'id',
          as: 'data_object_set',
        },
      },
      {
        $lookup: {
          from: 'workflow_execution_set',
          localField: 'id',
          foreignField: 'was_informed_by',
          pipeline: [{ $sort: { type: -1 } }],
          as: 'workflow_execution_set',
        },
      },
      {
        $lookup: {
          from: 'jobs',
          localField: 'id',
          foreignField: 'config.was_informed_by',
          pipeline: [{ $sort: { 'config.activity.type': -1 } }],
          as: 'jobs',
        },
      },
      {
        $match: {
          'data_object_set.in_manifest': { $exists: false },
          has_output: { $exists: true },
          'workflow_execution_set.qc_status': { $exists: false },
          'workflow_execution_set.qc_comment': { $exists: false },
          'workflow_execution_set.has_failure_categorization': { $exists: false },
        },
      },
      ...completion,
      {
        $group: {
          _id: { wfex_type: '$workflow_execution_set.type', job_wfex_type: '$jobs.config.activity.type' },
          n_dgs: { $sum: 1 },
          executions: {
            $push: {
              id: '$id',
              wfex_id: '$workflow_execution_set.id',
              wfex_end: '$workflow_execution_set.ended_at_time',
              job_id: '$jobs.id',
              job_wfid: '$jobs.config.activity_id',
              job_start: '$jobs.created_at',
            },
          },
        },
      },
    ];
  }

  interface ReportGroup {
    _id: { wfex_type: string[]; job_wfex_type: string[] };
    n_dgs: number;
    executions: Array<Record<string, unknown>>;
  }

  /**
   * The groups the study report's pipeline makes of the store's records. No `jobs` collection
   * exists here, so every job field is an empty list (as where no job was ever created).
   */
  async function expectedReport(show: 'all' | 'incomplete' | 'complete'): Promise<ReportGroup[]> {
    const objects = new Map((await storeWhere('data_object_set')).map((d) => [d.id, d]));
    const executions = await storeWhere('workflow_execution_set');
    const generations = await storeWhere(
      'data_generation_set',
      (d) => has('associated_studies', REPORT_STUDY)(d) && d.analyte_category === 'metagenome',
    );
    const groups = new Map<string, ReportGroup>();
    for (const dg of generations) {
      if (!('has_output' in dg)) continue;
      const outputs = (dg.has_output as string[]).flatMap((o) => objects.get(o) ?? []);
      if (outputs.some((o) => 'in_manifest' in o)) continue;
      const wfes = executions
        .filter(has('was_informed_by', dg.id))
        .sort((a, b) => ((a.type as string) < (b.type as string) ? 1 : -1));
      if (wfes.some((w) => 'qc_status' in w || 'qc_comment' in w || 'has_failure_categorization' in w))
        continue;
      const types = wfes.map((w) => w.type as string);
      const allTypes = WF_TYPES.every((t) => types.includes(t));
      if (show === 'incomplete' && wfes.length >= 5 && allTypes) continue;
      if (show === 'complete' && !(wfes.length >= 5 && allTypes)) continue;
      const key = JSON.stringify(types);
      const group = groups.get(key) ?? {
        _id: { wfex_type: types, job_wfex_type: [] },
        n_dgs: 0,
        executions: [],
      };
      group.n_dgs += 1;
      group.executions.push({
        id: dg.id,
        wfex_id: wfes.map((w) => w.id),
        wfex_end: wfes.map((w) => w.ended_at_time),
        job_id: [],
        job_wfid: [],
        job_start: [],
      });
      groups.set(key, group);
    }
    return normalizeReport([...groups.values()]);
  }

  /** Groups in the order of their keys, executions by id: neither order is something the report relies on. */
  function normalizeReport(groups: ReportGroup[]): ReportGroup[] {
    return groups
      .map((g) => ({
        ...g,
        executions: [...g.executions].sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1)),
      }))
      .sort((a, b) => (JSON.stringify(a._id) < JSON.stringify(b._id) ? -1 : 1));
  }

  it('run_aggregation (study-report defaults) -> NmdcRuntimeApi.run_query: three $lookup (one into jobs), $exists on array paths, $group with $push', async () => {
    const command = { aggregate: 'data_generation_set', pipeline: studyReportPipeline('all') };
    expect(jsonDumps(command)).toBe(
      '{"aggregate": "data_generation_set", "pipeline": [{"$match": {"associated_studies": "nmdc:sty-11-aygzgv51", "analyte_category": "metagenome"}}, {"$lookup": {"from": "data_object_set", "localField": "has_output", "foreignField": "id", "as": "data_object_set"}}, {"$lookup": {"from": "workflow_execution_set", "localField": "id", "foreignField": "was_informed_by", "pipeline": [{"$sort": {"type": -1}}], "as": "workflow_execution_set"}}, {"$lookup": {"from": "jobs", "localField": "id", "foreignField": "config.was_informed_by", "pipeline": [{"$sort": {"config.activity.type": -1}}], "as": "jobs"}}, {"$match": {"data_object_set.in_manifest": {"$exists": false}, "has_output": {"$exists": true}, "workflow_execution_set.qc_status": {"$exists": false}, "workflow_execution_set.qc_comment": {"$exists": false}, "workflow_execution_set.has_failure_categorization": {"$exists": false}}}, {"$group": {"_id": {"wfex_type": "$workflow_execution_set.type", "job_wfex_type": "$jobs.config.activity.type"}, "n_dgs": {"$sum": 1}, "executions": {"$push": {"id": "$id", "wfex_id": "$workflow_execution_set.id", "wfex_end": "$workflow_execution_set.ended_at_time", "job_id": "$jobs.id", "job_wfid": "$jobs.config.activity_id", "job_start": "$jobs.created_at"}}}}]}',
    );
    const run = await runQuery(server.url, adminToken, command);
    expect(run.responses.map((r) => r.status)).toEqual([200]);
    expect(run.responses[0]!.json).toMatchObject({ ok: 1, cursor: { id: null } });
    const expected = await expectedReport('all');
    // Complete (1, 2), reads QC and assembly only (3), nothing yet (4); 5 to 8 are filtered out.
    expect(expected.map((g) => g.executions.map((e) => e.id))).toEqual([
      ['nmdc:omprc-11-rep00003'],
      ['nmdc:omprc-11-rep00001', 'nmdc:omprc-11-rep00002'],
      ['nmdc:omprc-11-rep00004'],
    ]);
    expect(normalizeReport(run.results as unknown as ReportGroup[])).toEqual(expected);
  });

  it('run_aggregation (study-report --show incomplete) -> run_query: $or of $expr/$size and $not/$elemMatch per workflow type', async () => {
    const run = await runQuery(server.url, adminToken, {
      aggregate: 'data_generation_set',
      pipeline: studyReportPipeline('incomplete'),
    });
    expect(run.responses[0]!.status, run.responses[0]!.text).toBe(200);
    const expected = await expectedReport('incomplete');
    expect(expected.flatMap((g) => g.executions.map((e) => e.id)).sort()).toEqual([
      'nmdc:omprc-11-rep00003',
      'nmdc:omprc-11-rep00004',
    ]);
    expect(normalizeReport(run.results as unknown as ReportGroup[])).toEqual(expected);
  });

  it('run_aggregation (study-report --show complete) -> run_query: $and of $expr/$size and $elemMatch per workflow type', async () => {
    const run = await runQuery(server.url, adminToken, {
      aggregate: 'data_generation_set',
      pipeline: studyReportPipeline('complete'),
    });
    expect(run.responses[0]!.status, run.responses[0]!.text).toBe(200);
    const expected = await expectedReport('complete');
    expect(expected).toHaveLength(1);
    expect(expected[0]!.n_dgs).toBe(2);
    expect(normalizeReport(run.results as unknown as ReportGroup[])).toEqual(expected);
  });

  it('_get_workflow_executions with api_url "http://localhost:8000": was_informed_by equality on an array, projection "id, type, version", raw Basic header', async () => {
    const params: Array<[string, string]> = [
      ['filter', jsonDumps({ was_informed_by: DG_MAIN })],
      ['max_page_size', '10000'],
      ['projection', 'id, type, version'],
    ];
    const target = `/nmdcschema/workflow_execution_set?${requestsQuery(params)}`;
    expect(target).toBe(
      '/nmdcschema/workflow_execution_set?filter=%7B%22was_informed_by%22%3A+%22nmdc%3Aomprc-11-dfzknb42%22%7D&max_page_size=10000&projection=id%2C+type%2C+version',
    );
    const resources = expectOnePage(await get(target, RAW_BASIC_HEADERS));
    const expected = await storeWhere('workflow_execution_set', has('was_informed_by', DG_MAIN));
    expect(expected).toHaveLength(4);
    expect(byId(resources)).toEqual(expected.map((d) => project(d, 'type,version')));
  });

  it('_get_workflow_executions and get_unpooled_data_generation_ids with the shipped api_url ending in "/": //nmdcschema/... is 404, as the original answers it', async () => {
    // f"{api_url}/nmdcschema/..." with api_url = "https://api.microbiomedata.org/". The original's
    // router does not merge slashes: the client logs the status (or raises) for both.
    for (const target of [
      '//nmdcschema/workflow_execution_set?filter=%7B%22was_informed_by%22%3A+%22nmdc%3Aomprc-11-dfzknb42%22%7D&max_page_size=10000&projection=id%2C+type%2C+version',
      '//nmdcschema/data_generation_set?filter=%7B%22associated_studies%22%3A+%22nmdc%3Asty-11-aygzgv51%22%2C+%22analyte_category%22%3A+%22metagenome%22%7D&projection=id%2Chas_output&max_page_size=10000',
    ]) {
      const res = await get(target, RAW_BASIC_HEADERS);
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ detail: expect.stringMatching(/^not found$/i) });
    }
  });

  it('get_unpooled_data_generation_ids with api_url "http://localhost:8000": the study generations (id,has_output), then their data objects by $in (id,in_manifest)', async () => {
    const dgTarget = `/nmdcschema/data_generation_set?${requestsQuery([
      ['filter', jsonDumps({ associated_studies: REPORT_STUDY, analyte_category: 'metagenome' })],
      ['projection', 'id,has_output'],
      ['max_page_size', '10000'],
    ])}`;
    expect(dgTarget).toBe(
      '/nmdcschema/data_generation_set?filter=%7B%22associated_studies%22%3A+%22nmdc%3Asty-11-aygzgv51%22%2C+%22analyte_category%22%3A+%22metagenome%22%7D&projection=id%2Chas_output&max_page_size=10000',
    );
    const generations = expectOnePage(await get(dgTarget, RAW_BASIC_HEADERS));
    const expectedGenerations = await storeWhere(
      'data_generation_set',
      (d) => has('associated_studies', REPORT_STUDY)(d) && d.analyte_category === 'metagenome',
    );
    expect(byId(generations)).toEqual(expectedGenerations.map((d) => project(d, 'has_output')));

    // One batch of at most 100 output ids.
    const outputIds = [...new Set(generations.flatMap((d) => (d.has_output as string[] | undefined) ?? []))];
    expect(outputIds.length).toBeLessThanOrEqual(100);
    const doTarget = `/nmdcschema/data_object_set?${requestsQuery([
      ['filter', jsonDumps({ id: { $in: outputIds } })],
      ['projection', 'id,in_manifest'],
      ['max_page_size', '10000'],
    ])}`;
    const objects = expectOnePage(await get(doTarget, RAW_BASIC_HEADERS));
    expect(byId(objects)).toEqual(
      (await storeWhere('data_object_set', (d) => outputIds.includes(d.id))).map((d) =>
        project(d, 'in_manifest'),
      ),
    );

    // What the caller concludes: generations none of whose outputs is in a manifest.
    const inManifest = new Set(objects.filter((o) => o.in_manifest).map((o) => o.id));
    const unpooled = generations
      .filter((g) => ((g.has_output as string[] | undefined) ?? []).every((o) => !inManifest.has(o)))
      .map((g) => g.id)
      .sort();
    expect(unpooled).toEqual(idsOf(expectedGenerations).filter((id) => id !== 'nmdc:omprc-11-rep00005'));
  });
});

describe('nmdc_automation/run_process/run_import.py', () => {
  const updateQuery = {
    update: 'data_generation_set',
    updates: [{ q: { id: DG_IMPORT_UPDATE }, u: { $set: { has_output: [IMPORTED_OBJECT] } } }],
  };

  it('data_generation_update_query -> NmdcRuntimeApi.run_query with the site-client token: 403, the record unchanged', async () => {
    const before = await server.store.getById('data_generation_set', DG_IMPORT_UPDATE);
    const run = await runQuery(server.url, siteToken, updateQuery);
    expect(run.responses).toHaveLength(1);
    expect(run.responses[0]!.status).toBe(403);
    expect(run.responses[0]!.json).toEqual({ detail: expect.stringContaining('update') });
    expect(await server.store.getById('data_generation_set', DG_IMPORT_UPDATE)).toEqual(before);
  });

  it('data_generation_update_query -> NmdcRuntimeApi.run_query (privileged): {"ok": 1, "n": 1, "nModified": 1}, no cursor (run_query returns [])', async () => {
    const run = await runQuery(server.url, adminToken, updateQuery);
    expect(run.bodies).toEqual([
      '{"update": "data_generation_set", "updates": [{"q": {"id": "nmdc:omprc-12-upd00001"}, "u": {"$set": {"has_output": ["nmdc:dobj-11-abc12345"]}}}]}',
    ]);
    expect(run.responses[0]!.status, run.responses[0]!.text).toBe(200);
    expect(run.responses[0]!.json).toEqual({ ok: 1, n: 1, nModified: 1 });
    expect(run.results).toEqual([]);
    const updated = await server.store.getById('data_generation_set', DG_IMPORT_UPDATE);
    expect(updated).toMatchObject({ id: DG_IMPORT_UPDATE, has_output: [IMPORTED_OBJECT] });
  });
});

describe('nmdc_automation/run_process/db_tools.py', () => {
  const ZERO_SIZE_TARGET =
    '/nmdcschema/data_object_set?filter=%7B%22%24or%22%3A+%5B%7B%22file_size_bytes%22%3A+%7B%22%24exists%22%3A+false%7D%7D%2C%7B%22file_size_bytes%22%3A+null%7D%2C%7B%22file_size_bytes%22%3A+0%7D%5D%2C%22%24and%22%3A+%5B%7B%22url%22%3A+%7B%22%24exists%22%3A+true%7D%7D%2C%7B%22url%22%3A+%7B%22%24regex%22%3A+%22%5Ehttps%3A%2F%2Fdata.microbiomedata.org%2Fdata%2F%22%7D%7D%5D%7D&max_page_size=10000';

  it('update_zero_size_files: $or of $exists false / null / 0 and $and of $exists and a ^-anchored $regex, raw Basic header', async () => {
    const filter =
      '{"$or": [{"file_size_bytes": {"$exists": false}},{"file_size_bytes": null},{"file_size_bytes": 0}],"$and": [{"url": {"$exists": true}},{"url": {"$regex": "^https://data.microbiomedata.org/data/"}}]}';
    expect(
      `/nmdcschema/data_object_set?${requestsQuery([
        ['filter', filter],
        ['max_page_size', '10000'],
      ])}`,
    ).toBe(ZERO_SIZE_TARGET);
    const resources = expectOnePage(await get(ZERO_SIZE_TARGET, RAW_BASIC_HEADERS));
    const expected = await storeWhere(
      'data_object_set',
      (d) =>
        (d.file_size_bytes === undefined || d.file_size_bytes === null || d.file_size_bytes === 0) &&
        typeof d.url === 'string' &&
        d.url.startsWith('https://data.microbiomedata.org/data/'),
    );
    expect(idsOf(expected)).toEqual([
      'nmdc:dobj-11-zero0001',
      'nmdc:dobj-11-zero0002',
      'nmdc:dobj-11-zero0003',
    ]);
    expect(byId(resources)).toEqual(expected);
  });

  it('update_zero_size_files --update-db: POST /queries:run (json=) with the raw Basic header is 401, nothing written', async () => {
    const body = jsonDumps({
      update: 'data_object_set',
      updates: [{ q: { id: 'nmdc:dobj-11-zero0003' }, u: { $set: { file_size_bytes: 5 } } }],
    });
    const before = await server.store.getById('data_object_set', 'nmdc:dobj-11-zero0003');
    const res = await send(server.url, {
      method: 'POST',
      target: '/queries:run',
      headers: jsonPostHeaders('Basic nmdc_user:pw-123'),
      body,
    });
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ detail: 'Access token is invalid or missing. Please log in again.' });
    expect(await server.store.getById('data_object_set', 'nmdc:dobj-11-zero0003')).toEqual(before);
  });

  it('fix_data_object_urls: {"url": {"$regex": "/ficus/"}}, max_page_size=10000, raw Basic header', async () => {
    const target =
      '/nmdcschema/data_object_set?filter=%7B%22url%22%3A+%7B%22%24regex%22%3A+%22%2Fficus%2F%22%7D%7D&max_page_size=10000';
    expect(
      `/nmdcschema/data_object_set?${requestsQuery([
        ['filter', '{"url": {"$regex": "/ficus/"}}'],
        ['max_page_size', '10000'],
      ])}`,
    ).toBe(target);
    const resources = expectOnePage(await get(target, RAW_BASIC_HEADERS));
    const expected = await storeWhere('data_object_set', (d) => String(d.url ?? '').includes('/ficus/'));
    expect(idsOf(expected)).toEqual(['nmdc:dobj-11-ficus001', 'nmdc:dobj-11-ficus002']);
    // The caller reads id, data_object_type and url.
    expect(byId(resources)).toEqual(expected);
  });
});

describe('data_management/jamo_ingest.py', () => {
  it('query_collection("data_object_set", 100000, \'{"url": {"$exists": true}}\'): no accept header of its own, every page followed', async () => {
    const params: Array<[string, string | number]> = [
      ['max_page_size', 100000],
      ['filter', '{"url": {"$exists": true}}'],
    ];
    const run = await crawl(server.url, '/nmdcschema/data_object_set', params, BARE_HEADERS);
    expect(run.targets[0]).toBe(
      '/nmdcschema/data_object_set?max_page_size=100000&filter=%7B%22url%22%3A+%7B%22%24exists%22%3A+true%7D%7D',
    );
    // Everything fits on the first page: no next_page_token.
    expect(run.pages).toHaveLength(1);
    expect(expectOnePage(run.pages[0]!)).toEqual(run.records);
    const expected = await storeWhere('data_object_set', (d) => 'url' in d);
    expect(expected.map((d) => d.id)).not.toContain('nmdc:dobj-11-zero0005');
    expect(byId(run.records)).toEqual(expected);
  });

  it('query_collection("workflow_execution_set", 100000) without a filter', async () => {
    const run = await crawl(
      server.url,
      '/nmdcschema/workflow_execution_set',
      [['max_page_size', 100000]],
      BARE_HEADERS,
    );
    expect(run.targets).toEqual(['/nmdcschema/workflow_execution_set?max_page_size=100000']);
    expect(expectOnePage(run.pages[0]!)).toEqual(run.records);
    expect(byId(run.records)).toEqual(await storeWhere('workflow_execution_set'));
  });
});

describe('nmdc_automation/jgi_file_staging', () => {
  it('jgi_file_metadata.get_nmdc_study_id(508306, gold_token): five leading spaces before the JSON filter, a JGI GOLD bearer token', async () => {
    const target =
      '/nmdcschema/study_set?filter=%20%20%20%20%20%7B%22jgi_portal_study_identifiers%22:%22jgi.proposal:508306%22%7D';
    const resources = expectOnePage(await get(target, GOLD_HEADERS));
    const expected = await storeWhere('study_set', has('jgi_portal_study_identifiers', GOLD_PROPOSAL));
    expect(expected).toEqual([await server.store.getById('study_set', GOLD_STUDY)]);
    expect(resources).toEqual(expected);
    // The caller reads ['resources'][0]['id'].
    expect(resources[0]!.id).toBe(GOLD_STUDY);
  });

  it('mapping_tsv.get_gold_ids(study, gold_token): raw JSON with $exists in the URL, max_page_size=1000', async () => {
    const target =
      '/nmdcschema/data_generation_set?filter=%7B%22associated_studies%22:%22nmdc:sty-11-28tm5d36%22,%22gold_sequencing_project_identifiers%22:%7B%22$exists%22:true%7D%7D&max_page_size=1000';
    const resources = expectOnePage(await get(target, GOLD_HEADERS));
    const expected = await storeWhere(
      'data_generation_set',
      (d) => has('associated_studies', GOLD_STUDY)(d) && 'gold_sequencing_project_identifiers' in d,
    );
    expect(idsOf(expected)).toEqual(['nmdc:omprc-11-gold0001']);
    expect(byId(resources)).toEqual(expected);
  });
});

describe('wdl/assembly_stats.wdl', () => {
  it('task upload_stats: POST /queries:run (json=) an update whose statement carries "limit": 1, bearer token of a privileged caller', async () => {
    const stats = { scaffolds: 1234, contigs: 1300, scaf_bp: 5678901, gc_avg: 0.52 };
    const body = jsonDumps({
      update: 'workflow_execution_set',
      updates: [{ q: { id: ASSEMBLY }, u: { $set: stats }, limit: 1 }],
    });
    expect(body).toBe(
      '{"update": "workflow_execution_set", "updates": [{"q": {"id": "nmdc:wfmgas-11-abc123.1"}, "u": {"$set": {"scaffolds": 1234, "contigs": 1300, "scaf_bp": 5678901, "gc_avg": 0.52}}, "limit": 1}]}',
    );
    const before = (await server.store.getById('workflow_execution_set', ASSEMBLY))!;
    const res = await send(server.url, {
      method: 'POST',
      target: '/queries:run',
      headers: jsonPostHeaders(`Bearer ${adminToken}`),
      body,
    });
    // Anything but 200 makes the task exit 1.
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ ok: 1, n: 1, nModified: 1 });
    expect(await server.store.getById('workflow_execution_set', ASSEMBLY)).toEqual({ ...before, ...stats });
  });
});

describe('tests/ (the client test suite against a local service)', () => {
  it('tests/conftest.py is_api_available: GET {api_url}/ answers 303 to /docs, which requests follows to a 200', async () => {
    const root = await get('/', BARE_HEADERS);
    expect(root.status).toBe(303);
    expect(new URL(root.headers.location!, server.url).href).toBe(`${server.url}/docs`);
    const docs = await get(new URL(root.headers.location!, server.url).pathname, BARE_HEADERS);
    expect(docs.status).toBe(200);
    expect(docs.headers['content-type']).toMatch(/^text\/html/);
  });

  it('tests/test_nmdcapi_integration_local.py test_integration_environment: GET /sites/{site_id} without a token, the site by id', async () => {
    // The original serves a site without authentication; the test reads response["id"].
    const res = await get(`/sites/${SITE_ID}`, BARE_HEADERS);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ id: SITE_ID, capability_ids: [] });
  });
});
