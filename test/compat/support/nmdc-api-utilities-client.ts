/**
 * How nmdc_api_utilities (the NMDC Python client, built on `requests`) puts its calls on the wire:
 * its header sets, the query strings of its collection searches, the filter texts it writes, and
 * its pager, which repeats filter, page size and projection beside every `page_token`. Written from
 * the requests the client prepares, not from its code.
 */
import { expect } from 'vitest';
import { prng } from '../../../src/data/generator.ts';
import type { Doc } from '../../../src/store/port.ts';
import { jsonDumps, requestsQuery } from './python.ts';
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
