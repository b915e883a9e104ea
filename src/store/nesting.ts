/**
 * How deeply JSON may nest. MongoDB refuses documents nested more than 100 levels; the service
 * holds every JSON body and every record it validates to the same 100 levels, counted from the
 * outermost object or array (`{"a": [1]}` nests 2 levels). Checked before anything walks the
 * value recursively: a body nested 10,000 levels would otherwise overflow the stack of the
 * validators and answer 500.
 */

export const MAX_NESTING_DEPTH = 100;

/** The message of a refusal, naming the limit. */
export function nestingRefusal(what: string): string {
  return `${what} nests objects and arrays deeper than ${MAX_NESTING_DEPTH} levels, the most accepted (as MongoDB accepts for a document)`;
}

/** The code units of JSON's structure, for scanners that read JSON text without parsing it. */
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests deeper than `max`, by one pass over its code units (brackets inside
 * strings do not count). Text that is not JSON is left for the parser to refuse.
 */
export function textNestsDeeper(text: Buffer | string, max = MAX_NESTING_DEPTH): boolean {
  if (typeof text !== 'string') return bytesNestDeeper(text, max);
  const at = (i: number) => text.charCodeAt(i);
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/**
 * `textNestsDeeper` of UTF-8 (or ASCII-compatible) bytes. Strings, most of a body's bytes, are
 * skipped with `indexOf` (native) to each quote, which ends the string unless an odd run of
 * backslashes comes right before it.
 */
function bytesNestDeeper(bytes: Buffer, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      let end = i;
      for (;;) {
        end = bytes.indexOf(QUOTE, end + 1);
        if (end < 0) return false; // an unterminated string: the parser refuses the text
        let backslashes = 0;
        while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/**
 * How many values a parsed value holds, itself, its objects, arrays and their members included
 * (`{"a": [1, 2]}` holds 4), or undefined when it nests deeper than `max`. One walk, without
 * recursion.
 */
export function valuesWithin(value: unknown, max = MAX_NESTING_DEPTH): number | undefined {
  let values = 1;
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const v of level) {
      if (v === null || typeof v !== 'object') continue;
      if (depth + 1 > max) return undefined;
      const children = Array.isArray(v) ? v : Object.values(v);
      values += children.length;
      for (const child of children) if (child !== null && typeof child === 'object') next.push(child);
    }
    level = next;
  }
  return values;
}
