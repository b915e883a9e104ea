/**
 * The request helpers of the NMDC example notebooks, as they behave on the wire (written from the
 * requests they send, not from their code):
 * - `utility_functions.R`: `get_first_page_results` / `get_all_results` (a `?&filter=` query run
 *   through `URLencode`, with `page_token` pasted between `max_page_size` and `projection` on later
 *   pages, until `next_page_token` is NULL) and `get_results_by_id` (ids in chunks of
 *   `max_page_size`, each chunk an `$in` filter read with `get_all_results`);
 * - `NOM_visualizations/python/nmdc_api.py`: the same query shape in an f-string that `requests`
 *   requotes, paged until `next_page_token` is falsy.
 * Expected answers come from the store, the source of truth.
 */
import { expect } from 'vitest';
import type { Doc } from '../../../src/store/port.ts';
import type { CompatServer } from './server.ts';
import { JSONLITE_HEADERS, JSONLITE_URL_LIMIT, NMDC_API, targetOf, urlEncode } from './r.ts';
import { send, type WireResponse } from './wire.ts';

/** What `requests.get(url)` sends with no headers of the caller's own. */
export const REQUESTS_HEADERS: Record<string, string> = {
  'User-Agent': 'python-requests/2.34.2',
  'Accept-Encoding': 'gzip, deflate',
  Accept: '*/*',
  Connection: 'keep-alive',
};

/** A token both clients can paste raw into a URL: nothing for URLencode or a query parser to change. */
export const URL_SAFE_TOKEN = /^[A-Za-z0-9._~-]+$/;

export interface PagedRead {
  /** Every URL the client built, in order, before encoding. */
  urls: string[];
  /** The request targets that went on the wire. */
  targets: string[];
  pages: WireResponse[];
  /** Every page's `resources`, concatenated as the client binds them. */
  resources: Doc[];
}

// --- utility_functions.R ---------------------------------------------------------------------

export function rFirstPageUrl(
  collection: string,
  filter: string,
  maxPageSize: number,
  fields: string,
): string {
  return `${NMDC_API}/nmdcschema/${collection}?&filter=${filter}&max_page_size=${maxPageSize}&projection=${fields}`;
}

export function rNextPageUrl(
  collection: string,
  filter: string,
  maxPageSize: number,
  token: string,
  fields: string,
): string {
  return `${NMDC_API}/nmdcschema/${collection}?&filter=${filter}&max_page_size=${maxPageSize}&page_token=${token}&projection=${fields}`;
}

/** `get_all_results`: the first page, then while `next_page_token` is not NULL the next one. */
export function rGetAllResults(
  baseUrl: string,
  collection: string,
  filterText: string,
  maxPageSize: number,
  fields: string,
): Promise<PagedRead> {
  return readPages(baseUrl, collection, rFirstPageUrl(collection, filterText, maxPageSize, fields), {
    encode: urlEncode,
    headers: JSONLITE_HEADERS,
    // fromJSON stops the notebook on an HTTP error.
    stopsOnError: true,
    next: (token) =>
      token === undefined || token === null
        ? undefined
        : rNextPageUrl(collection, filterText, maxPageSize, String(token), fields),
  });
}

/** The filter `get_results_by_id` writes: ids quoted and joined by `", "`. */
export function rInFilter(matchIdField: string, ids: string[]): string {
  return `{"${matchIdField}": {"$in": [${ids.map((id) => `"${id}"`).join(', ')}]}}`;
}

/** R's `split(id_list, ceiling(seq_along(id_list) / max_page_size))`, or one chunk when short enough. */
export function rChunks(ids: string[], maxPageSize: number): string[][] {
  if (ids.length <= maxPageSize) return [ids];
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += maxPageSize) out.push(ids.slice(i, i + maxPageSize));
  return out;
}

export interface ChunkRead {
  ids: string[];
  filter: string;
  read: PagedRead;
}

/** `get_results_by_id(collection, match_id_field, id_list, fields, max_page_size = 50)`. */
export async function rGetResultsById(
  baseUrl: string,
  collection: string,
  matchIdField: string,
  idList: string[],
  fields: string,
  maxPageSize = 50,
): Promise<ChunkRead[]> {
  const out: ChunkRead[] = [];
  for (const ids of rChunks(idList, maxPageSize)) {
    const filter = rInFilter(matchIdField, ids);
    out.push({ ids, filter, read: await rGetAllResults(baseUrl, collection, filter, maxPageSize, fields) });
  }
  return out;
}

// --- NEON_soil_metadata and bioscales_biogeochemical_metadata (R) ---------------------------

/** The body of a compact find page, which the NEON and Bio-Scales loops read (`results`, `meta.count`). */
export function findPageBody(
  filterEcho: unknown,
  count: number,
  page: number,
  perPage: number,
  results: unknown,
) {
  return {
    meta: {
      mongo_filter_dict: filterEcho,
      mongo_sort_list: null,
      count,
      db_response_time_ms: expect.any(Number),
      page,
      per_page: perPage,
    },
    results,
    group_by: [],
  };
}

/**
 * The NEON / Bio-Scales biosample loop: `fromJSON` of
 * `/biosamples?filter=associated_studies:<id>&per_page=2000&page=N` as pasted (no URLencode), until
 * the rows collected reach `meta.count`. Each page is checked against the store on the way.
 */
export async function rBiosamplesOfStudy(server: CompatServer, studyId: string) {
  const expected = await server.store.find('biosample_set', { associated_studies: studyId });
  const targets: string[] = [];
  const rows: Doc[] = [];
  for (let page = 1; ; page++) {
    if (page > 10) throw new Error('the loop did not reach meta.count');
    const target = targetOf(
      `${NMDC_API}/biosamples?filter=associated_studies:${studyId}&per_page=2000&page=${page}`,
    );
    targets.push(target);
    const res = await send(server.url, { method: 'GET', target, headers: JSONLITE_HEADERS });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual(
      findPageBody({ associated_studies: studyId }, expected.length, page, 2000, expect.any(Array)),
    );
    expect(res.json.results).toHaveLength(Math.min(2000, expected.length - rows.length));
    rows.push(...res.json.results);
    if (rows.length >= res.json.meta.count) break;
  }
  return { expected, targets, rows };
}

// --- NOM_visualizations/python/nmdc_api.py ---------------------------------------------------

/** urllib3's allowed query characters: unreserved, sub-delimiters, `:@/?`; requests adds nothing. */
const REQUOTE_KEPT = /^[A-Za-z0-9._~\-!$&'()*+,;=:@/?]$/;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const ESCAPE = /%[0-9A-Fa-f]{2}/g;

/**
 * What `requests.get(url)` puts on the wire for an f-string URL: urllib3 percent-encodes every
 * byte outside its allowed set (spaces, quotes, braces, brackets, non-ASCII), upper-casing the
 * existing escapes (or encoding every `%` when one of them is not an escape); then requests decodes
 * the escapes of unreserved characters.
 */
export function requestsRequote(url: string): string {
  const raw = Buffer.from(url, 'utf8').toString('latin1');
  const keepEscapes = (raw.match(ESCAPE) ?? []).length === (raw.match(/%/g) ?? []).length;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    const pair = raw.slice(i + 1, i + 3);
    if (ch === '%' && keepEscapes) {
      const decoded = String.fromCharCode(parseInt(pair, 16));
      out += UNRESERVED.test(decoded) ? decoded : `%${pair.toUpperCase()}`;
      i += 2;
    } else if (REQUOTE_KEPT.test(ch)) {
      out += ch;
    } else {
      out += `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

export function pyFirstPageUrl(
  collection: string,
  filter: string,
  maxPageSize: number,
  fields: string,
): string {
  return `${NMDC_API}/nmdcschema/${collection}?&filter=${filter}&max_page_size=${maxPageSize}&projection=${fields}`;
}

export function pyNextPageUrl(
  collection: string,
  filter: string,
  maxPageSize: number,
  token: string,
  fields: string,
): string {
  return `${NMDC_API}/nmdcschema/${collection}?&filter=${filter}&max_page_size=${maxPageSize}&page_token=${token}&projection=${fields}`;
}

/** `get_first_page_results` (one request) or `get_next_results` (until the token is falsy). */
export function pyGetResults(
  baseUrl: string,
  collection: string,
  filter: string,
  maxPageSize: number,
  fields: string,
  allPages: boolean,
): Promise<PagedRead> {
  return readPages(baseUrl, collection, pyFirstPageUrl(collection, filter, maxPageSize, fields), {
    encode: requestsRequote,
    headers: REQUESTS_HEADERS,
    // The module calls resp.json() without checking the status; a body without resources ends it.
    stopsOnError: false,
    next: (token) =>
      !allPages || !token ? undefined : pyNextPageUrl(collection, filter, maxPageSize, String(token), fields),
  });
}

/** How a notebook's pager puts its URLs on the wire and decides to go on. */
interface Pager {
  encode(url: string): string;
  headers: Record<string, string>;
  /** Whether a page that is not 200 ends the read before its body is used. */
  stopsOnError: boolean;
  /** The URL of the page after one whose `next_page_token` is `token`, or undefined to stop. */
  next(token: unknown): string | undefined;
}

async function readPages(
  baseUrl: string,
  collection: string,
  firstUrl: string,
  pager: Pager,
): Promise<PagedRead> {
  const read: PagedRead = { urls: [], targets: [], pages: [], resources: [] };
  let url: string | undefined = firstUrl;
  while (url !== undefined) {
    if (read.pages.length >= 500) throw new Error(`${collection}: still paging after 500 pages`);
    const target = targetOf(pager.encode(url));
    const page = await send(baseUrl, { method: 'GET', target, headers: pager.headers });
    read.urls.push(url);
    read.targets.push(target);
    read.pages.push(page);
    if (pager.stopsOnError && page.status !== 200) return read;
    read.resources.push(...((page.json?.resources as Doc[] | undefined) ?? []));
    url = pager.next(page.json?.next_page_token);
  }
  return read;
}

// --- expectations ----------------------------------------------------------------------------

/** The store's answer to a JSON filter with a comma-separated projection (empty: whole records). */
export function storeAnswer(
  server: CompatServer,
  collection: string,
  filterText: string,
  fields: string,
): Promise<Doc[]> {
  const projection = fields === '' ? undefined : fields.split(',');
  return server.store.find(collection, JSON.parse(filterText), { projection });
}

/**
 * What the notebooks rely on across a paged read of `/nmdcschema/{collection}`: every page a 200
 * `{resources, next_page_token}` holding a full page while a token follows, a token they can paste
 * raw into the next URL, no token at all on the last page, and `expected` collected exactly once.
 * `urlLimit`: every R URL stays below jsonlite's limit, or fromJSON reads it as JSON text.
 */
export function expectPagedExactly(
  read: PagedRead,
  expected: Doc[],
  maxPageSize: number,
  urlLimit = true,
): void {
  for (const [i, page] of read.pages.entries()) {
    expect(page.status, `${read.targets[i]}: ${page.text}`).toBe(200);
    expect(page.headers['content-type']).toMatch(/^application\/json/);
    const last = i === read.pages.length - 1;
    if (last) {
      expect(Object.keys(page.json)).toEqual(['resources']);
    } else {
      expect(Object.keys(page.json).sort()).toEqual(['next_page_token', 'resources']);
      expect(page.json.resources).toHaveLength(maxPageSize);
      expect(page.json.next_page_token).toMatch(URL_SAFE_TOKEN);
    }
    if (urlLimit) expect(read.urls[i]!.length, read.urls[i]).toBeLessThan(JSONLITE_URL_LIMIT);
  }
  expect(read.pages).toHaveLength(Math.max(1, Math.ceil(expected.length / maxPageSize)));
  const ids = read.resources.map((r) => r.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(read.resources).toEqual(expected);
}

/** Each chunk of `get_results_by_id` read in full: the store's answer to that chunk's filter. */
export async function expectChunksExactly(
  server: CompatServer,
  collection: string,
  chunks: ChunkRead[],
  fields: string,
  maxPageSize: number,
): Promise<Doc[]> {
  const all: Doc[] = [];
  for (const chunk of chunks) {
    const expected = await storeAnswer(server, collection, chunk.filter, fields);
    expectPagedExactly(chunk.read, expected, maxPageSize);
    all.push(...expected);
  }
  return all;
}

export const idsOf = (docs: Array<{ id: string }>): string[] => docs.map((d) => d.id);
export const sortedIds = (docs: Array<{ id: string }>): string[] => idsOf(docs).sort();

// --- over_representation: get_reports_studyid (R and Python) ----------------------------------

export interface ReportFiles {
  protein_reports: Doc[];
  FASTA: Doc[];
  GFF: Doc[];
}

/**
 * How `get_reports_studyid` files a study's answer: each biosample's data objects that have a
 * `data_object_type`, as protein reports (`Protein Report`), FASTA files and GFF files (a type
 * containing `GFF`), keeping the biosamples with at least one protein report, under
 * `biosample_<id>`. R takes any type containing `FASTA` and files each object once (`else if`);
 * Python only `Annotation Amino Acid FASTA` and tests each kind on its own.
 */
export function reportsByBiosample(
  groups: Array<{ biosample_id: string; data_objects: Doc[] }>,
  flavour: 'R' | 'Python',
): Map<string, ReportFiles> {
  const out = new Map<string, ReportFiles>();
  for (const { biosample_id, data_objects } of groups) {
    const entry: ReportFiles = { protein_reports: [], FASTA: [], GFF: [] };
    for (const dobj of data_objects) {
      const type = dobj.data_object_type;
      if (typeof type !== 'string') continue;
      const report = type === 'Protein Report';
      const fasta = flavour === 'R' ? type.includes('FASTA') : type === 'Annotation Amino Acid FASTA';
      const gff = type.includes('GFF');
      if (report) entry.protein_reports.push(dobj);
      if (fasta && (flavour === 'Python' || !report)) entry.FASTA.push(dobj);
      if (gff && (flavour === 'Python' || !(report || fasta))) entry.GFF.push(dobj);
    }
    if (entry.protein_reports.length > 0) out.set(`biosample_${biosample_id}`, entry);
  }
  return out;
}

/** `_extract_fasta_id`: the FASTA id a protein report's file name carries, or '' when it has none. */
export function fastaIdOfReport(name: string): string {
  const match = /nmdc_dobj.*_nmdc_dobj(.*)_Protein_Report.tsv/.exec(name);
  return match ? `nmdc:dobj${match[1]}` : '';
}
