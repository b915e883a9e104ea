/**
 * How nmdc_automation (the NMDC workflow automation, built on `requests` 2.34.2) puts its calls on
 * the wire: the two header sets of `NmdcRuntimeApi` (before and after its first token), the headers
 * of the scripts that call the service directly, the query strings its collection crawls build and
 * the command sequence of `run_query`. Written from the requests the client prepares.
 */
import { expect } from 'vitest';
import type { Doc } from '../../../src/store/port.ts';
import { jsonDumps, requestsForm, requestsQuery, type PyParam } from './python.ts';
import { send, type WireResponse } from './wire.ts';
import { ADMIN, startCompatServer, type CompatServer } from './server.ts';
import { AUTOMATION_RECORDS } from './nmdc-automation-records.ts';

const REQUESTS_DEFAULTS = { 'User-Agent': 'python-requests/2.34.2', 'Accept-Encoding': 'gzip, deflate' };

/**
 * `NmdcRuntimeApi` before its first token: its own lower-case `accept` and a form Content-Type,
 * also on GETs without a body (list_from_collection, find_planned_processes, find_data_objects).
 * `get_token` posts its form with these same headers.
 */
export const FRESH_HEADERS = {
  ...REQUESTS_DEFAULTS,
  accept: 'application/json',
  Connection: 'keep-alive',
  'Content-Type': 'application/x-www-form-urlencoded',
};

/** `NmdcRuntimeApi` once `get_token` succeeded: a JSON Content-Type (on GETs too) and the bearer token. */
export function authedHeaders(token: string): Record<string, string> {
  return {
    ...REQUESTS_DEFAULTS,
    accept: 'application/json',
    Connection: 'keep-alive',
    'Content-Type': 'application/json',
    Authorization: `Bearer ${token}`,
  };
}

/** run_report.py and db_tools.py: `Basic user:password`, not base64-encoded, on public reads. */
export const RAW_BASIC_HEADERS = {
  ...REQUESTS_DEFAULTS,
  accept: 'application/json',
  Connection: 'keep-alive',
  Authorization: 'Basic nmdc_user:pw-123',
};

/** `requests.post(url, json=..., headers={accept, Authorization})`: requests adds the JSON Content-Type. */
export function jsonPostHeaders(authorization: string): Record<string, string> {
  return {
    ...REQUESTS_DEFAULTS,
    accept: 'application/json',
    Connection: 'keep-alive',
    Authorization: authorization,
    'Content-Type': 'application/json',
  };
}

/** A bare `requests.get(url, params=...)` (jamo_ingest.py, the test suite's probes): requests' defaults only. */
export const BARE_HEADERS = { ...REQUESTS_DEFAULTS, Accept: '*/*', Connection: 'keep-alive' };

/** jgi_file_staging's `get_request`: its own User-agent and a JGI GOLD bearer token, not an NMDC one. */
export const GOLD_HEADERS = {
  'User-agent': 'nmdc bot 0.1',
  'Accept-Encoding': 'gzip, deflate',
  accept: 'application/json',
  Connection: 'keep-alive',
  Authorization: 'Bearer JGI_GOLD_ACCESS_TOKEN',
};

/** `NmdcRuntimeApi.get_token`: the client-credentials form, in the client's key order. */
export function tokenForm(clientId: string, clientSecret: string): string {
  return requestsForm([
    ['grant_type', 'client_credentials'],
    ['client_id', clientId],
    ['client_secret', clientSecret],
  ]);
}

export function postToken(baseUrl: string, body: string): Promise<WireResponse> {
  return send(baseUrl, { method: 'POST', target: '/token', headers: FRESH_HEADERS, body });
}

/** The access token of a successful token answer, checking the keys `get_token` reads. */
export function accessTokenOf(res: WireResponse): string {
  expect(res.status, res.text).toBe(200);
  expect(res.json).toEqual({
    access_token: expect.any(String),
    token_type: 'bearer',
    expires: expect.objectContaining({ days: expect.any(Number) }),
  });
  return res.json.access_token as string;
}

export interface Crawl {
  targets: string[];
  pages: WireResponse[];
  /** Every page's `resources`, in the order they came. */
  records: Doc[];
}

/**
 * A crawl over `/nmdcschema/{collection}` as the client's loops run it: the same params every time,
 * `page_token` added after them (and replaced, keeping its place) while `next_page_token` is truthy.
 * It stops at a status of 400 or more, or at an answer without `resources`, as the client does.
 */
export async function crawl(
  baseUrl: string,
  path: string,
  params: Array<[string, PyParam]>,
  headers: Record<string, string>,
): Promise<Crawl> {
  const current = [...params];
  const result: Crawl = { targets: [], pages: [], records: [] };
  for (let page = 0; page < 100; page++) {
    const target = `${path}?${requestsQuery(current)}`;
    const res = await send(baseUrl, { method: 'GET', target, headers });
    result.targets.push(target);
    result.pages.push(res);
    if (res.status >= 400 || !Array.isArray(res.json?.resources)) return result;
    result.records.push(...res.json.resources);
    const token = res.json.next_page_token;
    if (!token) return result;
    const at = current.findIndex(([name]) => name === 'page_token');
    if (at >= 0) current[at] = ['page_token', token];
    else current.push(['page_token', token]);
  }
  throw new Error(`${path}: still paging after 100 pages`);
}

/**
 * `NmdcRuntimeApi.list_from_collection(collection, filt, projection, max)`: `max_page_size`, then
 * `filter` when `filt` is a non-empty dict, then `projection` passed through `json.dumps` (a
 * string gains literal double quotes), all through requests' `params=`.
 */
export function listFromCollection(
  baseUrl: string,
  headers: Record<string, string>,
  collection: string,
  filt?: Record<string, unknown>,
  projection?: string,
  max = 100,
): Promise<Crawl> {
  const params: Array<[string, PyParam]> = [['max_page_size', max]];
  if (filt && Object.keys(filt).length > 0) params.push(['filter', jsonDumps(filt)]);
  if (projection) params.push(['projection', jsonDumps(projection)]);
  return crawl(baseUrl, `/nmdcschema/${collection}`, params, headers);
}

export interface QueryRun {
  /** The command bodies sent, in order: the caller's command, then each `{"getMore": id}`. */
  bodies: string[];
  responses: WireResponse[];
  /** The concatenated `cursor.batch` lists: what `run_query` returns. */
  results: Doc[];
}

/**
 * `NmdcRuntimeApi.run_query(command)`: the command as given, then `{"getMore": <cursor.id>}` while
 * `cursor.id` is truthy; it collects `cursor.batch` and stops on an error status (raise_for_status).
 */
export async function runQuery(baseUrl: string, token: string, command: unknown): Promise<QueryRun> {
  const run: QueryRun = { bodies: [], responses: [], results: [] };
  let body = jsonDumps(command);
  for (let call = 0; call < 100; call++) {
    const res = await send(baseUrl, {
      method: 'POST',
      target: '/queries:run',
      headers: authedHeaders(token),
      body,
    });
    run.bodies.push(body);
    run.responses.push(res);
    if (res.status >= 400) return run;
    const cursor = res.json?.cursor ?? {};
    run.results.push(...(cursor.batch ?? []));
    if (!cursor.id) return run;
    body = jsonDumps({ getMore: cursor.id });
  }
  throw new Error('run_query: cursor.id never became falsy after 100 calls');
}

/** The ids of records, in their order. */
export const idsOf = (docs: Array<{ id: string }>) => docs.map((d) => d.id);

export const byId = <T extends { id: string }>(docs: T[]): T[] =>
  [...docs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The fields of a comma-separated projection that a record has, with `id` (as /nmdcschema projects). */
export function project(doc: Doc, fields: string): Doc {
  const out: Doc = { id: doc.id };
  for (const name of fields.split(',').map((f) => f.trim())) if (name in doc) out[name] = doc[name];
  return out;
}

/** A record as an aggregation returns it, without the `_id` every pipeline record carries. */
export function withoutMongoId<T extends Record<string, unknown>>(doc: T): Omit<T, '_id'> {
  const { _id: _ignored, ...rest } = doc;
  return rest;
}

/**
 * The service with the automation records, and the two tokens the tests use: the site client's
 * (what `get_token` obtains) and a runtime administrator's (the principal our service lets run
 * aggregate and update).
 */
export async function startAutomationServer(): Promise<{
  server: CompatServer;
  siteToken: string;
  adminToken: string;
}> {
  const server = await startCompatServer(AUTOMATION_RECORDS);
  const siteToken = accessTokenOf(
    await postToken(server.url, tokenForm(server.siteClient.client_id, server.siteClient.client_secret)),
  );
  const adminToken = accessTokenOf(
    await postToken(
      server.url,
      requestsForm([
        ['grant_type', 'password'],
        ['username', ADMIN.username],
        ['password', ADMIN.password],
      ]),
    ),
  );
  return { server, siteToken, adminToken };
}

/** Every record of a collection (id order), those `keep` accepts. */
export async function storeWhere(
  server: CompatServer,
  collection: string,
  keep: (d: Doc) => boolean = () => true,
): Promise<Doc[]> {
  return (await server.store.find(collection, {})).filter(keep);
}

/** A record whose `field` is `value` or a list holding it. */
export const has = (field: string, value: unknown) => (d: Doc) =>
  Array.isArray(d[field]) ? (d[field] as unknown[]).includes(value) : d[field] === value;
