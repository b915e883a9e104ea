/**
 * nmdc_api_utilities (the NMDC Python client), data_staging.py: `JGISequencingProjectAPI`,
 * `JGISampleSearchAPI` and `GlobusTaskAPI` send every request with the Bearer token of `NMDCAuth`
 * (here a site client's, holding the `/wf_file_staging` allowance), list with
 * `filter=json.dumps(filter)` (`null` when none is given), `max_page_size` and an empty
 * `projection`, and page with `_get_all_pages`, which sends the filter as given (empty, raw text,
 * or a dict that `requests` turns into its keys) beside `page_token`. Each call ends with
 * `raise_for_status`, so any 4xx or 5xx is the client's RuntimeError.
 * Then nmdc_automation's jgi_file_staging/ code, which calls the same endpoints through the 0.6.1
 * client (lower-case `accept`, requests' own User-Agent; `list_jgi_samples` sends only the token).
 * Its calls name methods 0.6.1 has under other names (`get_jgi_samples` for `list_jgi_samples`,
 * `get_globus_tasks`, `get_jgi_sequencing_project`); the requests replayed are those the methods it
 * means send. Its sample inserts and sample updates put `datetime` values in `json=`, which
 * `requests` cannot serialise, so they never reach the wire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Allowances } from '../../src/accounts/allowances.ts';
import type { Doc } from '../../src/store/port.ts';
import { startCompatServer, type CompatServer } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps, requestsQuery, type PyParam } from './support/python.ts';
import {
  LEGACY_USER_AGENT,
  PAGE_HEADERS,
  clientCredentialsForm,
  getToken,
} from './support/nmdc-api-utilities-client.ts';

let server: CompatServer;
let token: string;

const GLOBUS = 'wf_file_staging.globus_tasks';
const SAMPLES = 'wf_file_staging.jgi_samples';
const PROJECTS = 'wf_file_staging.jgi_sequencing_projects';

beforeAll(async () => {
  server = await startCompatServer();
  await new Allowances(server.store).create({
    username: server.siteClient.client_id,
    action: '/wf_file_staging',
  });
  token = await getToken(server.url, clientCredentialsForm(server.siteClient));
});
afterAll(async () => server?.close());

/** `_build_http_request_headers(access_token, accept="application/json", content_type="application/json")`. */
const headers = (): Record<string, string> => ({ ...PAGE_HEADERS, Authorization: `Bearer ${token}` });

/** 0.6.1: `{"accept", "Content-Type", "Authorization"}` over requests' defaults. */
const legacyHeaders = () => ({
  'User-Agent': LEGACY_USER_AGENT,
  'Accept-Encoding': 'gzip, deflate',
  accept: 'application/json',
  Connection: 'keep-alive',
  'Content-Type': 'application/json',
  Authorization: `Bearer ${token}`,
});

/** 0.6.1 `list_jgi_samples`: `headers={"Authorization": ...}` only. */
const legacyTokenOnlyHeaders = () => ({
  'User-Agent': LEGACY_USER_AGENT,
  'Accept-Encoding': 'gzip, deflate',
  Accept: '*/*',
  Connection: 'keep-alive',
  Authorization: `Bearer ${token}`,
});

const get = (target: string, h = headers()) => send(server.url, { method: 'GET', target, headers: h });
const withJson = (method: string, target: string, body: unknown, h = headers()) =>
  send(server.url, { method, target, headers: h, body: jsonDumps(body) });

/** The first page a list method asks for: `filter`, `max_page_size`, `projection` (empty). */
const firstPage = (path: string, filter: PyParam, maxPageSize = 20) =>
  `${path}?${requestsQuery([
    ['filter', filter],
    ['max_page_size', maxPageSize],
    ['projection', ''],
  ])}`;

/** `_get_all_pages`: the filter as the method was given it, then `page_token`. */
const laterPage = (path: string, filter: PyParam, maxPageSize: number, pageToken: string) =>
  `${path}?${requestsQuery([
    ['filter', filter],
    ['max_page_size', maxPageSize],
    ['projection', ''],
    ['page_token', pageToken],
  ])}`;

/** What `raise_for_status` lets through, and the `resources` a list method returns. */
function resourcesOf(res: WireResponse): Doc[] {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return res.json.resources;
}

/** A list method with `all_pages=True`: every page's resources, in order. */
async function allPages(
  path: string,
  filter: unknown,
  laterFilter: PyParam,
  maxPageSize: number,
): Promise<Doc[]> {
  let res = await get(firstPage(path, jsonDumps(filter), maxPageSize));
  const records = [...resourcesOf(res)];
  let pages = 1;
  while (res.json.next_page_token && pages < 20) {
    res = await get(laterPage(path, laterFilter, maxPageSize, res.json.next_page_token));
    records.push(...resourcesOf(res));
    pages++;
  }
  return records;
}

/** Records of a staging collection as the API answers them (the store's `id` left out). */
async function stored(
  collection: string,
  keep: (d: Doc) => boolean,
): Promise<Array<Record<string, unknown>>> {
  const docs = await server.store.find(collection, {});
  return docs.filter(keep).map(({ id: _id, ...rest }) => rest);
}

const project = (name: string) => ({
  sequencing_project_name: name,
  sequencing_project_description: `Staging of ${name}`,
  jgi_proposal_id: '503568',
  nmdc_study_id: 'nmdc:sty-11-28tm5d36',
});

const sample = (jdpFileId: string, projectName: string, status = 'RESTORED') => ({
  jdp_file_id: jdpFileId,
  ap_gold_id: 'Ga0307276',
  gold_study_id: 'Gs0135149',
  its_ap_id: '1196479.0',
  sequencing_project_name: projectName,
  gold_biosample_id: 'Gb0191643',
  gold_seq_id: '1196479',
  file_name: `${jdpFileId}.tar.gz`,
  jdp_file_status: status,
  globus_file_status: 'ACTIVE',
  jdp_file_size: 123456,
  md5sum: 'D43F2404CA13E22594E5C8B04D3BBB81',
  jgi_ap_id: '1196479',
  create_date: '2023-01-01T00:00:00Z',
  request_id: 1,
});

describe('data_staging.py JGISequencingProjectAPI', () => {
  it('create_jgi_sequencing_project(project): POST with the json= body, 201 and the record', async () => {
    const res = await withJson(
      'POST',
      '/wf_file_staging/jgi_sequencing_projects',
      project('Soil Crust Project'),
    );
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual(project('Soil Crust Project'));
    expect(await stored(PROJECTS, (d) => d.sequencing_project_name === 'Soil Crust Project')).toEqual([
      project('Soil Crust Project'),
    ]);
  });

  it('create_jgi_sequencing_project with a name that exists: a 4xx, so the client raises RuntimeError', async () => {
    await withJson('POST', '/wf_file_staging/jgi_sequencing_projects', project('Duplicate Project'));
    const res = await withJson(
      'POST',
      '/wf_file_staging/jgi_sequencing_projects',
      project('Duplicate Project'),
    );
    expect(res.status).toBe(409);
    expect(res.json.detail).toContain('Duplicate Project');
  });

  it('list_jgi_sequencing_projects(): filter=null, every project', async () => {
    const target = firstPage('/wf_file_staging/jgi_sequencing_projects', jsonDumps(null));
    expect(target).toBe('/wf_file_staging/jgi_sequencing_projects?filter=null&max_page_size=20&projection=');
    const expected = await stored(PROJECTS, () => true);
    expect(resourcesOf(await get(target))).toEqual(expected.slice(0, 20));
  });

  it('list_jgi_sequencing_projects(all_pages=True, max_page_size=1): later pages send filter= empty', async () => {
    for (const name of ['Paged Project A', 'Paged Project B']) {
      await withJson('POST', '/wf_file_staging/jgi_sequencing_projects', project(name));
    }
    const records = await allPages('/wf_file_staging/jgi_sequencing_projects', null, '', 1);
    const expected = await stored(PROJECTS, () => true);
    expect(records).toHaveLength(expected.length);
    expect(new Set(records.map((r) => r.sequencing_project_name))).toEqual(
      new Set(expected.map((r) => r.sequencing_project_name)),
    );
  });

  it('get_jgi_sequencing_project_by_name("Soil Crust Project"): the name in the path, spaces as %20', async () => {
    await withJson('POST', '/wf_file_staging/jgi_sequencing_projects', project('Soil Crust Project'));
    const res = await get('/wf_file_staging/jgi_sequencing_projects/Soil%20Crust%20Project');
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(project('Soil Crust Project'));
  });
});

describe('data_staging.py JGISampleSearchAPI', () => {
  it('insert_jgi_sample(sample): 201 and the sample', async () => {
    const res = await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-ins-1', 'Sample Project'));
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual(sample('jdp-ins-1', 'Sample Project'));
  });

  it('list_jgi_samples({"sequencing_project_name": ...}): the dict as json.dumps text', async () => {
    for (const id of ['jdp-l-1', 'jdp-l-2'])
      await withJson('POST', '/wf_file_staging/jgi_samples', sample(id, 'Listed Project'));
    const filter = { sequencing_project_name: 'Listed Project' };
    const target = firstPage('/wf_file_staging/jgi_samples', jsonDumps(filter));
    expect(target).toContain('filter=%7B%22sequencing_project_name%22%3A+%22Listed+Project%22%7D');
    expect(resourcesOf(await get(target))).toEqual([
      sample('jdp-l-1', 'Listed Project'),
      sample('jdp-l-2', 'Listed Project'),
    ]);
  });

  it('list_jgi_samples(): no filter is json.dumps({}), every sample', async () => {
    const res = await get(firstPage('/wf_file_staging/jgi_samples', jsonDumps({}), 1000));
    expect(resourcesOf(res)).toEqual(await stored(SAMPLES, () => true));
  });

  it('list_jgi_samples(\'{"sequencing_project_name": ...}\'): a text filter, json.dumps makes it a JSON string', async () => {
    await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-t-1', 'Text Filter Project'));
    const text = '{"sequencing_project_name": "Text Filter Project"}';
    expect(jsonDumps(text)).toBe('"{\\"sequencing_project_name\\": \\"Text Filter Project\\"}"');
    const res = await get(firstPage('/wf_file_staging/jgi_samples', jsonDumps(text)));
    expect(resourcesOf(res)).toEqual([sample('jdp-t-1', 'Text Filter Project')]);
  });

  it('list_jgi_samples(dict, all_pages=True, max_page_size=1): later pages send the dict as its keys', async () => {
    for (const id of ['jdp-pg-1', 'jdp-pg-2', 'jdp-pg-3']) {
      await withJson('POST', '/wf_file_staging/jgi_samples', sample(id, 'Crawled Project'));
    }
    // requests iterates a dict given as a parameter value: `filter=sequencing_project_name`.
    const records = await allPages(
      '/wf_file_staging/jgi_samples',
      { sequencing_project_name: 'Crawled Project' },
      ['sequencing_project_name'],
      1,
    );
    expect(records.map((r) => r.jdp_file_id)).toEqual(['jdp-pg-1', 'jdp-pg-2', 'jdp-pg-3']);
  });

  it('update_jgi_sample(jdp_file_id, sample): PATCH with the whole sample changed', async () => {
    await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-up-1', 'Update Project'));
    const changed = { ...sample('jdp-up-1', 'Update Project', 'READY'), request_id: 42 };
    const res = await withJson('PATCH', '/wf_file_staging/jgi_samples/jdp-up-1', changed);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(changed);
    expect(await stored(SAMPLES, (d) => d.jdp_file_id === 'jdp-up-1')).toEqual([changed]);
  });
});

describe('data_staging.py GlobusTaskAPI', () => {
  it('create_globus_task({"task_id": "54321", "task_status": "ACTIVE"}) (test_create_globus_task)', async () => {
    const res = await withJson('POST', '/wf_file_staging/globus_tasks', {
      task_id: '54321',
      task_status: 'ACTIVE',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json).toEqual({ task_id: '54321', task_status: 'ACTIVE' });
  });

  it('list_globus_tasks({"task_status": {"$ne": "SUCCEEDED"}}) then update_globus_task("54321", {...}) (test_get/test_update)', async () => {
    await withJson('POST', '/wf_file_staging/globus_tasks', { task_id: '54321', task_status: 'ACTIVE' });
    const filter = { task_status: { $ne: 'SUCCEEDED' } };
    const pending = resourcesOf(await get(firstPage('/wf_file_staging/globus_tasks', jsonDumps(filter))));
    expect(pending).toEqual(await stored(GLOBUS, (d) => d.task_status !== 'SUCCEEDED'));
    expect(pending).toContainEqual({ task_id: '54321', task_status: 'ACTIVE' });

    const updated = await withJson('PATCH', '/wf_file_staging/globus_tasks/54321', {
      task_id: '54321',
      task_status: 'SUCCEEDED',
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.json).toEqual({ task_id: '54321', task_status: 'SUCCEEDED' });
    const after = resourcesOf(await get(firstPage('/wf_file_staging/globus_tasks', jsonDumps(filter))));
    expect(after.map((t) => t.task_id)).not.toContain('54321');
  });

  it('list_globus_tasks(): filter=null', async () => {
    const res = await get('/wf_file_staging/globus_tasks?filter=null&max_page_size=20&projection=');
    expect(resourcesOf(res)).toEqual((await stored(GLOBUS, () => true)).slice(0, 20));
  });

  it('without the /wf_file_staging allowance: 403 (a user token), so the client raises RuntimeError', async () => {
    const userToken = await getToken(server.url, [
      ['grant_type', 'password'],
      ['username', 'compat-researcher'],
      ['password', 'compat-researcher-password-1'],
    ]);
    const res = await get('/wf_file_staging/globus_tasks?filter=null&max_page_size=20&projection=', {
      ...PAGE_HEADERS,
      Authorization: `Bearer ${userToken}`,
    });
    expect(res.status).toBe(403);
    expect(res.json).toEqual({
      detail: 'Only specific users are allowed to issue wf_file_staging commands.',
    });
  });
});

describe('nmdc_automation jgi_file_staging/ (through nmdc_api_utilities 0.6.1)', () => {
  it('globus_file_transfer.insert_globus_status_into_mongodb(task_id, "IN_PROGRESS"): create_globus_task', async () => {
    const res = await withJson(
      'POST',
      '/wf_file_staging/globus_tasks',
      { task_id: 'e5130cf8-ce5d-11ed-a9b9-63ca5f6c6821', task_status: 'IN_PROGRESS' },
      legacyHeaders(),
    );
    expect(res.status, res.text).toBe(201);
  });

  it('globus_file_transfer.update_globus_statuses: tasks not SUCCEEDED, then update_globus_task(task_id, {"task_status": ...}) without task_id', async () => {
    await withJson(
      'POST',
      '/wf_file_staging/globus_tasks',
      { task_id: 'auto-task-1', task_status: 'ACTIVE' },
      legacyHeaders(),
    );
    const tasks = resourcesOf(
      await get(
        firstPage('/wf_file_staging/globus_tasks', jsonDumps({ task_status: { $ne: 'SUCCEEDED' } })),
        legacyHeaders(),
      ),
    );
    expect(tasks).toContainEqual({ task_id: 'auto-task-1', task_status: 'ACTIVE' });
    const res = await withJson(
      'PATCH',
      '/wf_file_staging/globus_tasks/auto-task-1',
      { task_status: 'SUCCEEDED' },
      legacyHeaders(),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ task_id: 'auto-task-1', task_status: 'SUCCEEDED' });
  });

  it('file_restoration.restore_files: samples of the project not RESTORED (only the token header)', async () => {
    await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-r-1', 'Restore Project', 'RESTORED'));
    await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-r-2', 'Restore Project', 'PURGED'));
    const filter = { sequencing_project_name: 'Restore Project', jdp_file_status: { $ne: 'RESTORED' } };
    const res = await get(
      firstPage('/wf_file_staging/jgi_samples', jsonDumps(filter)),
      legacyTokenOnlyHeaders(),
    );
    expect(resourcesOf(res)).toEqual([sample('jdp-r-2', 'Restore Project', 'PURGED')]);
  });

  it('globus_file_transfer.get_project_globus_manifests: {"file_status": {"$nin": ["PURGED", "EXPIRED"]}}', async () => {
    await withJson('POST', '/wf_file_staging/jgi_samples', sample('jdp-m-1', 'Manifest Project'));
    const filter = {
      sequencing_project_name: 'Manifest Project',
      file_status: { $nin: ['PURGED', 'EXPIRED'] },
    };
    const res = await get(
      firstPage('/wf_file_staging/jgi_samples', jsonDumps(filter)),
      legacyTokenOnlyHeaders(),
    );
    // Samples have no `file_status`: `$nin` matches a missing field, as MongoDB's does.
    expect(resourcesOf(res)).toEqual([sample('jdp-m-1', 'Manifest Project')]);
  });

  it('jgi_file_metadata.get_samples_data: the sequencing project by name', async () => {
    await withJson('POST', '/wf_file_staging/jgi_sequencing_projects', project('grow'), legacyHeaders());
    const res = await get('/wf_file_staging/jgi_sequencing_projects/grow', {
      'User-Agent': LEGACY_USER_AGENT,
      'Accept-Encoding': 'gzip, deflate',
      accept: 'application/json',
      Connection: 'keep-alive',
      Authorization: `Bearer ${token}`,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.jgi_proposal_id).toBe('503568');
  });
});
