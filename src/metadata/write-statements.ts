/**
 * The statements of `update` and `delete` commands (`POST /queries:run`), checked as MongoDB checks
 * them before anything is read or written: a delete statement needs its filter `q` and its `limit`
 * (0 or 1), an update statement its `q` and `u`; `u` is update operators with typed operands or a
 * replacement record; MongoDB fields the service does not run are refused (other fields are
 * ignored, as the original ignores them). Every refusal is a 422 whose
 * detail names the place (`deletes[0].q`, `updates[1].u.$unset`), so a statement without a filter
 * is never read as "every record".
 */
import { Unprocessable } from '../errors.ts';
import { UnsupportedQuery } from '../errors.ts';
import { guardFilter } from '../query/guard/index.ts';
import { checkFieldPath } from '../query/guard/field-names.ts';
import type { Filter } from '../store/port.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** MongoDB's `maxWriteBatchSize`: statements one command may hold. */
export const MAX_WRITE_STATEMENTS = 100_000;
/** Field paths one update statement may name (a record of the schema has a few hundred slots). */
export const MAX_UPDATE_PATHS = 10_000;
/** Longest the checks hold the event loop before giving other requests a turn. */
const TURN_MS = 20;

export interface DeleteStatement {
  q: Filter;
  /** 0: every match; 1: the first match (in id order). */
  limit: 0 | 1;
}

export interface UpdateStatement {
  q: Filter;
  /** Update operators (`$set`, ...) and their operands, or a whole replacement record. */
  u: UpdateOperators | Replacement;
  upsert: boolean;
  multi: boolean;
  arrayFilters?: Filter[];
}

export interface UpdateOperators {
  kind: 'operators';
  operators: Record<string, Record<string, unknown>>;
}

export interface Replacement {
  kind: 'replacement';
  record: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** How a value is named in a message: its JSON type, as MongoDB names BSON types. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

const refuse = (message: string): never => {
  throw new Unprocessable(message);
};

/** The list of statements under `key` (`deletes`, `updates`), within MongoDB's bounds. */
function statementsOf(command: Record<string, unknown>, key: string, example: string): unknown[] {
  const list = command[key];
  if (list === undefined)
    refuse(`${key} is missing: the command needs a list of statements, e.g. ${example}`);
  if (!Array.isArray(list))
    refuse(`${key} must be a list of statements, e.g. ${example}, not ${typeName(list)}`);
  const statements = list as unknown[];
  if (statements.length === 0 || statements.length > MAX_WRITE_STATEMENTS)
    refuse(`${key} must hold between 1 and ${MAX_WRITE_STATEMENTS} statements, not ${statements.length}`);
  return statements;
}

/** Said beside a missing field: the statement's fields that are no field of it (a misplaced filter?). */
function strayFields(statement: Record<string, unknown>, known: readonly string[]): string {
  const stray = Object.keys(statement).filter((k) => !known.includes(k));
  return stray.length === 0
    ? ''
    : ` (${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} not a field of the statement)`;
}

/**
 * Refuses the fields of MongoDB's statements this service does not run. Other fields are ignored,
 * as the original service ignores them: clients send some (nmdc_automation puts `limit` in
 * update statements).
 */
function checkUnsupported(
  statement: Record<string, unknown>,
  place: string,
  unsupported: Record<string, string>,
) {
  for (const field of Object.keys(statement))
    if (Object.hasOwn(unsupported, field))
      refuse(`${place}.${field} is not supported: ${unsupported[field]}`);
}

/** A statement's filter: required, an object, and one the filter guard accepts. */
function filterOf(
  statement: Record<string, unknown>,
  place: string,
  kind: 'delete' | 'update',
  known: readonly string[],
): Filter {
  if (!('q' in statement))
    refuse(
      `${place}.q is missing: every ${kind} statement needs its filter q ({} matches every record), as in MongoDB` +
        strayFields(statement, known),
    );
  const q = statement.q;
  if (!isObject(q)) refuse(`${place}.q must be an object (a filter), not ${typeName(q)}`);
  try {
    return guardFilter(q);
  } catch (err) {
    if (err instanceof UnsupportedQuery) refuse(`${place}.q: ${err.detail}`);
    throw err;
  }
}

/** A filter or a condition on values (`{"$gt": 5}`), checked by the filter guard. */
function guardedCondition(condition: Record<string, unknown>, place: string): Filter {
  const keys = Object.keys(condition);
  const onValues =
    keys.length > 0 && keys.every((k) => k.startsWith('$') && !['$and', '$or', '$nor'].includes(k));
  try {
    return onValues ? (guardFilter({ value: condition }).value as Filter) : guardFilter(condition);
  } catch (err) {
    if (err instanceof UnsupportedQuery) refuse(`${place}: ${err.detail}`);
    throw err;
  }
}

/** Refuses `$regex` where the update itself evaluates conditions, outside the linear-time engine. */
function refuseRegex(value: unknown, place: string): void {
  if (Array.isArray(value)) value.forEach((v) => refuseRegex(v, place));
  else if (isObject(value))
    for (const [key, v] of Object.entries(value)) {
      if (key === '$regex')
        refuse(`${place}: $regex is not supported here (use $in or $eq with literal values)`);
      refuseRegex(v, place);
    }
}

/** Whether an update path uses the positional `$` (the item the filter matched). */
export function usesPositional(u: UpdateOperators): boolean {
  return Object.values(u.operators).some((fields) =>
    Object.keys(fields).some((path) => path.split('.').includes('$')),
  );
}

function checkHint(statement: Record<string, unknown>, place: string): void {
  // Accepted and not needed: the query planner chooses how records are read.
  if ('hint' in statement && typeof statement.hint !== 'string' && !isObject(statement.hint))
    refuse(`${place}.hint must be an index name or an index key pattern`);
}

const UNSUPPORTED_STATEMENT_FIELDS = {
  collation: 'filters compare strings exactly (binary), as MongoDB does without a collation',
};

/** Each statement checked in turn, other requests served between them every TURN_MS. */
async function eachChecked<T>(statements: unknown[], check: (raw: unknown, i: number) => T): Promise<T[]> {
  const out: T[] = [];
  let since = performance.now();
  for (const [i, raw] of statements.entries()) {
    out.push(check(raw, i));
    if (performance.now() - since >= TURN_MS) {
      await nextTurn();
      since = performance.now();
    }
  }
  return out;
}

/** The statements of a `delete` command. */
export function deleteStatementsOf(command: Record<string, unknown>): Promise<DeleteStatement[]> {
  const statements = statementsOf(command, 'deletes', '[{"q": {"id": "nmdc:bsm-11-abc"}, "limit": 1}]');
  return eachChecked(statements, (raw, i) => {
    const place = `deletes[${i}]`;
    if (!isObject(raw)) return refuse(`${place} must be an object {"q": <filter>, "limit": 0 or 1}`);
    const known = ['q', 'limit', 'hint'];
    const q = filterOf(raw, place, 'delete', known);
    if (!('limit' in raw))
      refuse(
        `${place}.limit is missing: every delete statement needs limit, 0 (every match) or 1 (the first match), as in MongoDB` +
          strayFields(raw, known),
      );
    checkUnsupported(raw, place, UNSUPPORTED_STATEMENT_FIELDS);
    if (raw.limit !== 0 && raw.limit !== 1)
      refuse(
        `${place}.limit must be 0 (every match) or 1 (the first match), not ${JSON.stringify(raw.limit)}`,
      );
    checkHint(raw, place);
    return { q, limit: raw.limit as 0 | 1 };
  });
}

/** The statements of an `update` command. */
export function updateStatementsOf(command: Record<string, unknown>): Promise<UpdateStatement[]> {
  const statements = statementsOf(
    command,
    'updates',
    '[{"q": {"id": "nmdc:bsm-11-abc"}, "u": {"$set": {"name": "a new name"}}}]',
  );
  return eachChecked(statements, (raw, i) => {
    const place = `updates[${i}]`;
    if (!isObject(raw)) return refuse(`${place} must be an object {"q": <filter>, "u": <update>}`);
    const known = ['q', 'u', 'upsert', 'multi', 'arrayFilters', 'hint'];
    const q = filterOf(raw, place, 'update', known);
    if (!('u' in raw))
      refuse(
        `${place}.u is missing: every update statement needs u, update operators ({"$set": {...}}) or a replacement record, as in MongoDB` +
          strayFields(raw, known),
      );
    checkUnsupported(raw, place, {
      ...UNSUPPORTED_STATEMENT_FIELDS,
      c: 'constants are for pipeline updates, which are not supported',
    });
    for (const flag of ['upsert', 'multi'] as const)
      if (flag in raw && typeof raw[flag] !== 'boolean')
        refuse(`${place}.${flag} must be true or false, not ${typeName(raw[flag])}`);
    const multi = raw.multi === true;
    const u = updateOf(raw, place);
    if (multi && u.kind === 'replacement')
      refuse(
        `${place}.u is a replacement record, which replaces one record: multi needs update operators ($set, ...), as in MongoDB`,
      );
    let arrayFilters: Filter[] | undefined;
    if ('arrayFilters' in raw) {
      if (!Array.isArray(raw.arrayFilters) || !raw.arrayFilters.every(isObject))
        refuse(`${place}.arrayFilters must be a list of filter objects`);
      if (u.kind === 'replacement') refuse(`${place}.arrayFilters only apply to update operators`);
      arrayFilters = (raw.arrayFilters as unknown[]).map((f, k) => {
        const filter = guardedCondition(f as Record<string, unknown>, `${place}.arrayFilters[${k}]`);
        refuseRegex(filter, `${place}.arrayFilters[${k}]`);
        return filter;
      });
    }
    // The positional `$` finds its item by the filter, evaluated beside the update (not by the store).
    if (u.kind === 'operators' && usesPositional(u))
      refuseRegex(q, `${place}.q (with a positional $ update)`);
    checkHint(raw, place);
    return { q, u, upsert: raw.upsert === true, multi, ...(arrayFilters ? { arrayFilters } : {}) };
  });
}

function updateOf(statement: Record<string, unknown>, place: string): UpdateOperators | Replacement {
  const u = statement.u;
  if (Array.isArray(u))
    refuse(
      `${place}.u is a pipeline: pipeline updates are not supported, use update operators ($set, $unset, ...)`,
    );
  if (!isObject(u))
    refuse(`${place}.u must be an object, update operators or a replacement record, not ${typeName(u)}`);
  const update = u as Record<string, unknown>;
  const keys = Object.keys(update);
  const operators = keys.filter((k) => k.startsWith('$'));
  if (operators.length === 0) {
    checkReplacement(update, `${place}.u`);
    return { kind: 'replacement', record: update };
  }
  if (operators.length !== keys.length) {
    const field = keys.find((k) => !k.startsWith('$'))!;
    refuse(
      `${place}.u mixes update operators (${operators[0]}) and fields (${field}): use operators, or a whole replacement record`,
    );
  }
  return { kind: 'operators', operators: checkOperators(update, `${place}.u`) };
}

/** A replacement record's own field names (no `$` operators at any depth, no empty or prototype names). */
function checkReplacement(record: Record<string, unknown>, place: string): void {
  const walk = (value: unknown, path: string, depth: number): void => {
    if (depth > MAX_PATH_DEPTH) refuse(`${place} is nested deeper than ${MAX_PATH_DEPTH} levels`);
    const child = (key: string | number) => (path ? `${path}.${key}` : String(key));
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, child(i), depth + 1));
    else if (isObject(value))
      for (const [key, v] of Object.entries(value)) {
        if (key.startsWith('$'))
          refuse(`${place}: the field ${child(key)} of a replacement record starts with $`);
        if (key === '' || key.includes('.'))
          refuse(`${place}: ${JSON.stringify(child(key))} is not a valid field name in a record`);
        walk(v, child(key), depth + 1);
      }
  };
  walk(record, '', 0);
}

/** Nesting of record values (MongoDB nests documents at most 100 deep). */
const MAX_PATH_DEPTH = 100;

/** Update operators and what each one's operand per field must be. */
const OPERAND_CHECKS: Record<string, (value: unknown) => string | undefined> = {
  $set: () => undefined,
  $setOnInsert: () => undefined,
  $unset: () => undefined,
  $min: () => undefined,
  $max: () => undefined,
  $pull: () => undefined,
  $inc: (v) => (typeof v === 'number' ? undefined : 'must be a number'),
  $mul: (v) => (typeof v === 'number' ? undefined : 'must be a number'),
  $rename: (v) => (typeof v === 'string' ? undefined : 'must be a string, the new field path'),
  $pop: (v) => (v === 1 || v === -1 ? undefined : 'must be 1 (the last item) or -1 (the first)'),
  $pullAll: (v) => (Array.isArray(v) ? undefined : 'must be a list of the values to remove'),
  $currentDate: (v) =>
    v === true || v === false || (isObject(v) && (v.$type === 'date' || v.$type === 'timestamp'))
      ? undefined
      : 'must be true or {"$type": "date"} (or "timestamp")',
  $bit: (v) =>
    isObject(v) &&
    Object.keys(v).length === 1 &&
    ['and', 'or', 'xor'].includes(Object.keys(v)[0]!) &&
    Number.isInteger(Object.values(v)[0])
      ? undefined
      : 'must be {"and" | "or" | "xor": <integer>}',
  $push: (v) => eachModifiers(v, ['$each', '$slice', '$sort', '$position']),
  $addToSet: (v) => eachModifiers(v, ['$each']),
};

export const UPDATE_OPERATORS: readonly string[] = Object.keys(OPERAND_CHECKS).sort();

/** `$push` and `$addToSet` operands: a value, or `{"$each": [...]}` with its modifiers. */
function eachModifiers(value: unknown, allowed: string[]): string | undefined {
  if (!isObject(value) || !Object.keys(value).some((k) => k.startsWith('$'))) return undefined;
  for (const key of Object.keys(value))
    if (!allowed.includes(key)) return `may hold ${allowed.join(', ')} (${key} is not one of them)`;
  if (!Array.isArray(value.$each)) return 'needs $each, a list of the values to add';
  if ('$slice' in value && !Number.isInteger(value.$slice)) return '$slice must be an integer';
  if ('$position' in value && !Number.isInteger(value.$position)) return '$position must be an integer';
  if ('$sort' in value && value.$sort !== 1 && value.$sort !== -1 && !isObject(value.$sort))
    return '$sort must be 1, -1 or an object of field: 1 or -1';
  return undefined;
}

/** The segments of an update path: positional `$`, `$[]` and `$[<name>]` may stand for array items. */
function checkUpdatePath(path: string, place: string): string[] {
  try {
    checkFieldPath(path);
  } catch (err) {
    if (err instanceof UnsupportedQuery) refuse(`${place}: ${err.detail}`);
    throw err;
  }
  const segments = path.split('.');
  if (segments.length > MAX_PATH_DEPTH) refuse(`${place}: the path is deeper than ${MAX_PATH_DEPTH} fields`);
  segments.forEach((segment, i) => {
    if (!segment.startsWith('$')) return;
    if (i > 0 && (segment === '$' || /^\$\[[A-Za-z0-9]*\]$/.test(segment))) return;
    refuse(
      `${place}: the field ${JSON.stringify(path)} starts a name with $ (only positional $, $[] and $[<id>] may)`,
    );
  });
  return segments;
}

/** The operators of `u`, each an object of field: operand; paths checked, no two of them overlapping. */
function checkOperators(u: Record<string, unknown>, place: string): Record<string, Record<string, unknown>> {
  const paths: Array<{ path: string; segments: string[] }> = [];
  for (const [operator, fields] of Object.entries(u)) {
    if (isObject(fields) && paths.length + Object.keys(fields).length > MAX_UPDATE_PATHS)
      refuse(`${place} names more than ${MAX_UPDATE_PATHS} fields: split it into several statements`);
    const check = OPERAND_CHECKS[operator];
    if (!check)
      refuse(`${place}.${operator} is not an update operator (one of ${UPDATE_OPERATORS.join(', ')})`);
    if (!isObject(fields))
      refuse(
        `${place}.${operator} must be an object of field: value, not ${typeName(fields)} ` +
          `(for example {"${operator}": {"<field>": ...}}, as in MongoDB)`,
      );
    for (const [path, operand] of Object.entries(fields as Record<string, unknown>)) {
      const at = `${place}.${operator}.${path}`;
      paths.push({ path, segments: checkUpdatePath(path, `${place}.${operator}`) });
      const problem = check!(operand);
      if (problem) refuse(`${at} ${problem}, not ${JSON.stringify(operand) ?? typeName(operand)}`);
      if (operator === '$pull' && isObject(operand)) refuseRegex(guardedCondition(operand, at), at);
      if (operator === '$rename') {
        const target = operand as string;
        const segments = checkUpdatePath(target, at);
        if (segments.some((s) => s.startsWith('$')) || path.split('.').some((s) => s.startsWith('$')))
          refuse(`${at}: $rename cannot use positional paths`);
        paths.push({ path: target, segments });
      }
    }
  }
  // Sorted by segments, a path that is another's prefix (or equal to it) comes right before one
  // that starts with it: neighbours are the only pairs to compare.
  const sorted = paths
    .map((p) => ({ ...p, key: p.segments.join('\u0000') }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1]!;
    const after = sorted[i]!;
    if (after.key === before.key || after.key.startsWith(`${before.key}\u0000`))
      refuse(
        `${place}: updating the path '${after.path}' would create a conflict at '${before.path}', as in MongoDB`,
      );
  }
  return u as Record<string, Record<string, unknown>>;
}
