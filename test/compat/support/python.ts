/**
 * How the Python clients put values on the wire, written from the behaviour of `requests` 2.x and
 * the standard library (never their code): `urlencode(params, doseq=True)` with `quote_plus`, and
 * `json.dumps` with its default separators.
 */

/** A Python value as a query parameter: None drops the key, a list repeats it. */
export type PyParam = string | number | boolean | null | undefined | Array<string | number | boolean>;

/** `urllib.parse.quote_plus`: letters, digits and `_.-~` stay; space is `+`; the rest `%XX` of UTF-8. */
export function quotePlus(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** `str()` of a Python scalar: booleans are `True`/`False`. */
function pyStr(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return String(value);
}

/** The query string `requests` builds from a params dict, in the dict's order. */
export function requestsQuery(params: Array<[string, PyParam]>): string {
  const parts: string[] = [];
  for (const [name, value] of params) {
    if (value === null || value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) parts.push(`${quotePlus(name)}=${quotePlus(pyStr(v))}`);
  }
  return parts.join('&');
}

/** A form body (`data={...}`) as `requests` encodes it: the same encoding as a query string. */
export const requestsForm = requestsQuery;

/** `json.dumps(value)`: `", "` and `": "` separators, non-ASCII as `\uXXXX`. */
export function jsonDumps(value: unknown): string {
  const text = JSON.stringify(value, null, 1)
    // One space per level, then joined onto one line: Python's default separators.
    .replace(/\n\s*/g, (m, offset: number, whole: string) => {
      const before = whole[offset - 1];
      const after = whole[offset + m.length];
      if (before === '[' || before === '{' || after === ']' || after === '}') return '';
      return ' ';
    });
  return text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
