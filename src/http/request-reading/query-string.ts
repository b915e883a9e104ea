/**
 * A query string read the way the original service reads it (FastAPI on Starlette), rewritten
 * into one the OpenAPI validator and the handlers can take at face value:
 * - an empty value is an absent parameter (`filter=&projection=` asks for nothing);
 * - a parameter the operation does not take is ignored, never an error;
 * - a list parameter keeps every value in order (`ids=a&ids=b`), a single-valued one its last;
 * - the boolean words `true/false`, `1/0`, `yes/no`, `on/off`, `t/f`, `y/n` (any case) are booleans.
 * Values that are present but wrong stay as they are, so the validator can say what is wrong.
 */
import type { QueryParameter, QueryParameterKind } from './operations.ts';

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', 'f', 'n']);

export interface ReadQuery {
  /** The query string to hand on (without `?`); empty when nothing is left. */
  query: string;
  /** Names of the parameters the operation does not take, in the order they came. */
  ignored: string[];
}

function readValue(value: string, kind: Exclude<QueryParameterKind, 'list'>): string {
  if (kind !== 'boolean') return value;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return 'true';
  if (FALSE_WORDS.has(word)) return 'false';
  return value;
}

export function readQueryString(raw: string, parameters: readonly QueryParameter[]): ReadQuery {
  const byName = new Map(parameters.map((p) => [p.name, p]));
  const values = new Map<string, string[]>();
  const ignored: string[] = [];
  for (const [name, value] of new URLSearchParams(raw)) {
    if (!byName.has(name)) {
      if (!ignored.includes(name)) ignored.push(name);
      continue;
    }
    const list = values.get(name);
    if (list) list.push(value);
    else values.set(name, [value]);
  }

  const out = new URLSearchParams();
  for (const [name, given] of values) {
    const parameter = byName.get(name)!;
    if (parameter.kind === 'list') {
      for (const value of given) {
        if (value !== '') out.append(name, readValue(value, parameter.itemKind ?? 'single'));
      }
    } else {
      const last = given[given.length - 1];
      if (last !== '') out.append(name, readValue(last, parameter.kind));
    }
  }
  return { query: out.toString(), ignored };
}
