/**
 * A test of a record's stored JSON text before it is parsed, for the `$regex` conditions a filter
 * ANDs at its top level on plain paths (`name`, `geo_loc_name.has_raw_value`): the string at the
 * path is read off the text, skipping what comes before it unparsed, and a record whose string
 * there fails the regex cannot match the filter. Parsing a whole record (about 5 us for 1.4 KB)
 * is what a walk in id order spends most on; reading one string near the start costs far less.
 *
 * The test decides only what it is sure of. The stored text is `JSON.stringify` of the record
 * (one key each, so the first occurrence is the value), and a path reached through objects alone
 * gives MongoDB traversal exactly that one value. A missing key, an array, any other kind of value,
 * or text the reader does not expect leaves the record to be parsed and decided by the full filter,
 * as every read is. The regex is the filter's own compiled one (re2js).
 *
 * When the filter is nothing but such conditions, strings read that all pass decide a match too:
 * the record is handed out as read (`FindOptions.asText`), neither parsed nor checked again. A page
 * of 25 whole records found by `name ~ /a.e/` (or `geo_loc_name ~ /Toolik/`, and the others of
 * `bench:search`) took 0.3-0.5 ms less in the store's process at 10^5 and 10^6 biosamples.
 */
import type { RE2JS } from 're2js';
import { compileRegex } from '../filter.ts';
import type { Filter } from '../port.ts';

/**
 * `no`: the record cannot match. `yes`: it matches, without being parsed: the filter is nothing
 * but such conditions (`$regex` and `$options` alone, on plain paths), and the string at each path
 * was read and passes. `parse`: it must be parsed and decided by the full filter.
 */
export type TextTest = (text: string) => 'no' | 'yes' | 'parse';

interface Condition {
  segments: string[];
  re: RE2JS;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A key MongoDB traversal reads as an object key in every record (not an array position). */
const PLAIN_SEGMENT = /^(?!\d+$)[^.$][^.]*$/;

/**
 * Collects the filter's top-level `$regex` conditions on plain paths; answers whether they are the
 * whole filter (nothing else in it, not even another operator beside a `$regex`).
 */
function conditionsOf(filter: Filter, out: Condition[]): boolean {
  let whole = true;
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value) && value.length > 0) {
      for (const sub of value) {
        if (isObject(sub)) whole = conditionsOf(sub, out) && whole;
        else whole = false;
      }
    } else if (
      !key.startsWith('$') &&
      isObject(value) &&
      typeof value.$regex === 'string' &&
      Object.keys(value).every((k) => k.startsWith('$'))
    ) {
      const segments = key.split('.');
      if (!segments.every((s) => PLAIN_SEGMENT.test(s))) {
        whole = false;
        continue;
      }
      const options = typeof value.$options === 'string' ? value.$options : '';
      if (
        !Object.keys(value).every(
          (k) => k === '$regex' || (k === '$options' && typeof value.$options === 'string'),
        )
      )
        whole = false;
      out.push({ segments, re: compileRegex(value.$regex, options) });
    } else whole = false;
  }
  return whole;
}

/** The test of a filter's top-level `$regex` conditions, or undefined when it has none to read. */
export function textTestOf(filter: Filter): TextTest | undefined {
  const conditions: Condition[] = [];
  let whole: boolean;
  try {
    whole = conditionsOf(filter, conditions);
  } catch {
    return undefined; // a regex the filter refuses: the read fails there, not here
  }
  if (conditions.length === 0) return undefined;
  return (text) => {
    let read = true;
    for (const c of conditions) {
      const value = stringAt(text, c.segments);
      if (value === undefined) read = false;
      else if (!c.re.test(value)) return 'no';
    }
    return whole && read ? 'yes' : 'parse';
  };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** JSON's white space: space, tab, line feed, carriage return. */
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/**
 * The index of the quote closing the string opened at `i`, or -1: the next quote not escaped,
 * found by `indexOf` (most of a record's text is inside strings).
 */
function stringEnd(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--; // stops at the opening quote at the latest
    if ((q - 1 - b) % 2 === 0) return q;
    from = q + 1;
  }
}

/** The JSON string from `i` (its opening quote) to `end` (its closing quote), decoded. */
function decoded(text: string, i: number, end: number): string {
  const raw = text.slice(i + 1, end);
  return raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
}

/** The index after the JSON value starting at `i`, or -1. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) {
    const end = stringEnd(text, i);
    return end < 0 ? -1 : end + 1;
  }
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) {
        j = stringEnd(text, j);
        if (j < 0) return -1;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  while (j < text.length) {
    const d = text.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
    j++;
  }
  return j > i ? j : -1;
}

/**
 * The string at `segments` in the JSON object text, reached through objects only; undefined for
 * anything else (a missing key, another kind of value, unexpected text). Keys are compared where
 * they lie in the text, not copied out: at 10^6 biosamples `geo_loc_name.has_raw_value` lies 930
 * characters in, past 20 keys.
 */
export function stringAt(text: string, segments: readonly string[]): string | undefined {
  let i = skipSpace(text, 0);
  for (let s = 0; s < segments.length; s++) {
    if (text.charCodeAt(i) !== 0x7b) return undefined;
    i = skipSpace(text, i + 1);
    const segment = segments[s]!;
    for (;;) {
      if (text.charCodeAt(i) !== QUOTE) return undefined; // '}' (no such key) or unexpected
      const keyEnd = stringEnd(text, i);
      if (keyEnd < 0) return undefined;
      const found = keyIs(text, i, keyEnd, segment);
      i = skipSpace(text, keyEnd + 1);
      if (text.charCodeAt(i) !== 0x3a) return undefined;
      i = skipSpace(text, i + 1);
      if (found) break;
      const end = valueEnd(text, i);
      if (end < 0) return undefined;
      i = skipSpace(text, end);
      if (text.charCodeAt(i) !== 0x2c) return undefined; // '}': no such key
      i = skipSpace(text, i + 1);
    }
  }
  if (text.charCodeAt(i) !== QUOTE) return undefined;
  const end = stringEnd(text, i);
  return end < 0 ? undefined : decoded(text, i, end);
}

/**
 * Whether the JSON string from `i` (its opening quote) to `end` (its closing quote) decodes to
 * `key`. An escape is longer than the character it stands for: a text shorter than the key cannot
 * be it, one as long is it only when it is the key's own characters and the key has no backslash,
 * and a longer one is decoded only when it holds an escape.
 */
function keyIs(text: string, i: number, end: number, key: string): boolean {
  const length = end - i - 1;
  if (length <= key.length)
    return length === key.length && !key.includes('\\') && text.startsWith(key, i + 1);
  for (let j = i + 1; j < end; j++)
    if (text.charCodeAt(j) === BACKSLASH) return decoded(text, i, end) === key;
  return false;
}
