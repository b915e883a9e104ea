/**
 * How nmdc_api_utilities (the NMDC Python client, built on `requests`) puts its calls on the wire:
 * its header sets, the query strings of its collection searches, the filter texts it writes, and
 * its pager, which repeats filter, page size and projection beside every `page_token`. Written from
 * the requests the client prepares, not from its code.
 */
import { expect } from 'vitest';
import { prng } from '../../../src/data/generator.ts';
import type { Doc } from '../../../src/store/port.ts';
import { jsonDumps, requestsForm, requestsQuery } from './python.ts';
import { send, type WireResponse } from './wire.ts';

/** The released client (0.7.0) names itself; 0.6.x sent requests' default User-Agent. */
export const USER_AGENT = 'nmdc-python-client/0.7.0';
export const LEGACY_USER_AGENT = 'python-requests/2.34.2';

/** What `requests` adds to every request: no brotli or zstandard on the caller's machine. */
const SESSION_DEFAULTS = { 'Accept-Encoding': 'gzip, deflate' };

/** Every first-page read (collection searches, by-id reads, collection names, /version). */
export const READ_HEADERS = {
  'User-Agent': USER_AGENT,
  ...SESSION_DEFAULTS,
  Accept: '*/*',
  Connection: 'keep-alive',
};

/** Follow-up pages: JSON Accept and a JSON Content-Type on a GET without a body. */
export const PAGE_HEADERS = {
  'User-Agent': USER_AGENT,
  ...SESSION_DEFAULTS,
  Accept: 'application/json',
  Connection: 'keep-alive',
  'Content-Type': 'application/json',
};

/** POST /token: a form body, no Accept of the client's own. */
export const TOKEN_HEADERS = {
  'User-Agent': USER_AGENT,
  ...SESSION_DEFAULTS,
  Accept: '*/*',
  Connection: 'keep-alive',
  'Content-Type': 'application/x-www-form-urlencoded',
};

/** `NMDCAuth.get_token`: posts the form of its grant to /token; the `access_token` (200 expected). */
export async function getToken(baseUrl: string, form: Array<[string, string]>): Promise<string> {
  const res = await send(baseUrl, {
    method: 'POST',
    target: '/token',
    headers: TOKEN_HEADERS,
    body: requestsForm(form),
  });
  expect(res.status, res.text).toBe(200);
  return res.json.access_token;
}

/** The client-credentials form of a site client. */
export function clientCredentialsForm(client: {
  client_id: string;
  client_secret: string;
}): Array<[string, string]> {
  return [
    ['grant_type', 'client_credentials'],
    ['client_id', client.client_id],
    ['client_secret', client.client_secret],
  ];
}

export const LEGACY_READ_HEADERS = { ...READ_HEADERS, 'User-Agent': LEGACY_USER_AGENT };
export const LEGACY_PAGE_HEADERS = { ...PAGE_HEADERS, 'User-Agent': LEGACY_USER_AGENT };

/** `filter`, `max_page_size`, `projection` (always present, even empty), then `page_token` on later pages. */
export function collectionQuery(
  filter: string,
  maxPageSize: number,
  fields: string,
  pageToken?: string,
): string {
  return requestsQuery([
    ['filter', filter],
    ['max_page_size', maxPageSize],
    ['projection', fields],
    ['page_token', pageToken],
  ]);
}

/** A character Python's `re` calls non-word (`\W` on str): anything but letters, digits and `_`. */
const NON_WORD = /[^\p{L}\p{N}_]/gu;

/**
 * The filter text of `CollectionSearch.get_record_by_attribute`: written by hand, compact, with two
 * literal backslashes before every non-word character of the value (one after JSON decoding); or
 * the bare value when `exact_match` is true.
 */
export function attributeFilter(name: string, value: string, exactMatch = false): string {
  if (exactMatch) return `{"${name}":"${value}"}`;
  const escaped = value.replace(NON_WORD, (c) => `\\\\${c}`);
  return `{"${name}":{"$regex":"${escaped}","$options":"i"}}`;
}

/** `DataProcessing.build_filter`: one backslash per non-word character, then `json.dumps`. */
export function buildFilter(attributes: Record<string, string>, exactMatch = false): string {
  const filter: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(attributes)) {
    filter[name] = exactMatch ? value : { $regex: value.replace(NON_WORD, (c) => `\\${c}`), $options: 'i' };
  }
  return jsonDumps(filter);
}

/** Python's `repr` of a float, as an f-string prints it: `45.0`, `-8.983152841195214e-07`. */
export function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${Object.is(x, -0) ? '-0' : x}.0`;
  const [mantissa, exponentText] = x.toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return String(x);
}

/**
 * `list(set(ids))`: the client de-duplicates ids through a set, so their order depends on the
 * caller's hash seed. A fixed shuffle stands for one such order.
 */
export function setOrder(ids: string[], seed = 7): string[] {
  const out = [...new Set(ids)];
  const random = prng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function chunks<T>(list: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

export interface Paged {
  targets: string[];
  pages: WireResponse[];
  /** Every page's `resources`, concatenated as the client does. */
  resources: Doc[];
}

/**
 * A paged read as the client's pager runs it: the first target with the read headers, then, while
 * `next_page_token` is truthy, the target for that token with the pager's headers. Stops at the
 * first page that is not a 200, where the client raises.
 */
export async function followPages(
  baseUrl: string,
  targetFor: (pageToken?: string) => string,
  headers: { first: Record<string, string>; next: Record<string, string> } = {
    first: READ_HEADERS,
    next: PAGE_HEADERS,
  },
): Promise<Paged> {
  const targets = [targetFor()];
  const pages = [await send(baseUrl, { method: 'GET', target: targets[0]!, headers: headers.first })];
  for (let last = pages[0]!; last.status === 200 && last.json?.next_page_token; last = pages.at(-1)!) {
    if (pages.length > 500) throw new Error(`${targets[0]}: still paging after 500 pages`);
    const target = targetFor(String(last.json.next_page_token));
    targets.push(target);
    pages.push(await send(baseUrl, { method: 'GET', target, headers: headers.next }));
  }
  return { targets, pages, resources: pages.flatMap((p) => (p.json?.resources as Doc[] | undefined) ?? []) };
}

/**
 * `CollectionSearch.get_records(..., all_pages=True)`: filter, page size and projection repeated on
 * every page, the token added after them.
 */
export function getAllPages(
  baseUrl: string,
  path: string,
  filter: string,
  maxPageSize: number,
  fields: string,
): Promise<Paged> {
  return followPages(baseUrl, (token) => `${path}?${collectionQuery(filter, maxPageSize, fields, token)}`);
}

/** `urllib.parse.quote` with its default `safe='/'`: how 0.6.x encoded filters into the URL itself. */
export function pyQuote(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}

/**
 * What the client relies on across a paged read: every page a 200 `{resources, next_page_token?}`,
 * full pages while a token follows, no token on the last page, and `expected` collected exactly
 * once, in id order.
 */
export function expectPagedExactly(paged: Paged, expected: Doc[], maxPageSize: number): void {
  for (const [i, page] of paged.pages.entries()) {
    expect(page.status, `page ${i + 1}: ${page.text}`).toBe(200);
    const last = i === paged.pages.length - 1;
    expect(Object.keys(page.json).sort()).toEqual(last ? ['resources'] : ['next_page_token', 'resources']);
    if (!last) {
      expect(page.json.resources).toHaveLength(maxPageSize);
      expect(typeof page.json.next_page_token).toBe('string');
    } else {
      expect(page.json.resources.length).toBeLessThanOrEqual(maxPageSize);
    }
  }
  expect(paged.pages).toHaveLength(Math.max(1, Math.ceil(expected.length / maxPageSize)));
  const ids = paged.resources.map((r) => r.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(paged.resources).toEqual(expected);
}

/** The ids of records, for messages and `$in` filters. */
export const idsOf = (docs: Array<{ id: string }>): string[] => docs.map((d) => d.id);

/**
 * A first page as the client reads it (`resources`, and `next_page_token` only when more remain):
 * the first `maxPageSize` of `expected`, with a token exactly when `expected` is longer.
 */
export function expectFirstPage(res: WireResponse, expected: Doc[], maxPageSize: number): void {
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  if (expected.length > maxPageSize) {
    expect(res.json).toEqual({
      resources: expected.slice(0, maxPageSize),
      next_page_token: expect.any(String),
    });
  } else {
    expect(res.json).toEqual({ resources: expected });
  }
}

/** A projection as the service applies it: the named top-level fields, and `id` always. */
export function project(doc: Doc, fields: string): Doc {
  if (fields === '') return doc;
  const keep = new Set(['id', ...fields.split(',')]);
  return Object.fromEntries(Object.entries(doc).filter(([k]) => keep.has(k))) as Doc;
}

// --- nmdc_search.py: linked instances ----------------------------------------------------------

/** How many ids `get_linked_instances` sends a request. */
export const LINKED_IDS_PER_BATCH = 250;

/** A `types` argument: None (no key), a bare string (one value) or a list (the key repeated). */
export type TypesArgument = string | string[] | null;

/** First page of a batch: params `types`, `ids`, `hydrate` (`True`/`False`), `max_page_size`. */
export function linkedInstancesQuery(
  types: TypesArgument,
  ids: string[],
  hydrate: boolean,
  maxPageSize: number,
): string {
  return requestsQuery([
    ['types', types],
    ['ids', ids],
    ['hydrate', hydrate],
    ['max_page_size', maxPageSize],
  ]);
}

/** Later pages of a batch: `types`, `ids` and the token only (neither `hydrate` nor `max_page_size`). */
export function linkedInstancesNextQuery(types: TypesArgument, ids: string[], pageToken: string): string {
  return requestsQuery([
    ['types', types],
    ['ids', ids],
    ['page_token', pageToken],
  ]);
}

export interface LinkedBatch {
  ids: string[];
  targets: string[];
  pages: WireResponse[];
}

export interface LinkedRead {
  batches: LinkedBatch[];
  /** Every page's `resources`, batch after batch, concatenated as the client returns them. */
  records: Doc[];
  /** The first page that was not a 200: the client raises RuntimeError with its status and text. */
  failed?: WireResponse;
}

/**
 * `NMDCSearch.get_linked_instances(ids, hydrate, types, max_page_size)` on the wire: the ids (a
 * bare string becomes a list) in batches of 250, each batch's first page, then its later pages
 * while `next_page_token` is truthy, every request with the plain read headers. A later page that
 * is not a 200 leaves the token as it was, so the client would send the same request forever: that
 * fails here instead.
 */
export async function getLinkedInstances(
  baseUrl: string,
  args: { ids: string | string[]; types?: TypesArgument; hydrate?: boolean; maxPageSize?: number },
): Promise<LinkedRead> {
  const { types = null, hydrate = false, maxPageSize = 500 } = args;
  const ids = Array.isArray(args.ids) ? args.ids : [args.ids];
  const path = '/nmdcschema/linked_instances';
  const read: LinkedRead = { batches: [], records: [] };
  for (const batchIds of chunks(ids, LINKED_IDS_PER_BATCH)) {
    const batch: LinkedBatch = { ids: batchIds, targets: [], pages: [] };
    read.batches.push(batch);
    const get = async (target: string) => {
      const page = await send(baseUrl, { method: 'GET', target, headers: READ_HEADERS });
      batch.targets.push(target);
      batch.pages.push(page);
      return page;
    };
    const first = await get(`${path}?${linkedInstancesQuery(types, batchIds, hydrate, maxPageSize)}`);
    if (first.status !== 200) {
      read.failed = first;
      return read;
    }
    read.records.push(...((first.json?.resources as Doc[] | undefined) ?? []));
    let token: unknown = first.json?.next_page_token;
    while (token) {
      if (batch.pages.length > 500) throw new Error(`${path}: still paging after 500 pages`);
      const page = await get(`${path}?${linkedInstancesNextQuery(types, batchIds, String(token))}`);
      if (page.status !== 200) {
        throw new Error(
          `page ${batch.pages.length} answered ${page.status}: the client would repeat it forever`,
        );
      }
      read.records.push(...((page.json?.resources as Doc[] | undefined) ?? []));
      token = page.json?.next_page_token;
    }
  }
  return read;
}

/**
 * `get_linked_instances_and_associate_ids`: for each record, for `_upstream_of` then
 * `_downstream_of`, every id named there gets the record's id (or, hydrated, the record without
 * that one field) appended to its list, keys in the order first met.
 */
export function associateIds(records: Doc[], hydrate: boolean): Map<string, Array<string | Doc>> {
  const association = new Map<string, Array<string | Doc>>();
  for (const record of records) {
    for (const stream of ['_upstream_of', '_downstream_of']) {
      const named = record[stream];
      if (!Array.isArray(named)) continue;
      for (const id of named as string[]) {
        if (!association.has(id)) association.set(id, []);
        association
          .get(id)!
          .push(
            hydrate
              ? (Object.fromEntries(Object.entries(record).filter(([k]) => k !== stream)) as Doc)
              : record.id,
          );
      }
    }
  }
  return association;
}
