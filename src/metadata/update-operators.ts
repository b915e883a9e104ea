/**
 * What an update statement does to a record: its `u` applied to copies of the records it matched
 * (update operators by mingo, after the checks MongoDB makes of the values they act on, or a whole
 * replacement), and the new record an upsert starts from.
 */
// Updates run on mingo with their regular expressions (`$pull` conditions) on the linear-time engine.
import { updateManyLinear } from './pipeline-engine.ts';
import { Unprocessable } from '../errors.ts';
import type { Filter } from '../store/port.ts';
import { usesPositional, type UpdateOperators, type UpdateStatement } from './write-statements.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The new record of an upsert: the equality conditions of `q` (top level and in `$and`). */
export function upsertBase(q: Filter): Record<string, unknown> {
  const base: Record<string, unknown> = {};
  const take = (filter: Filter) => {
    for (const [path, condition] of Object.entries(filter)) {
      if (path === '$and' && Array.isArray(condition)) {
        condition.forEach((branch) => isObject(branch) && take(branch));
        continue;
      }
      if (path.startsWith('$')) continue;
      let value: unknown = condition;
      if (isObject(condition)) {
        const keys = Object.keys(condition);
        if (keys.length === 1 && keys[0] === '$eq') value = condition.$eq;
        else if (keys.some((k) => k.startsWith('$'))) continue;
      }
      setPath(base, path.split('.'), structuredClone(value));
    }
  };
  take(q);
  return base;
}

function setPath(target: Record<string, unknown>, segments: string[], value: unknown): void {
  let node = target;
  for (const segment of segments.slice(0, -1)) {
    if (!isObject(node[segment])) node[segment] = {};
    node = node[segment] as Record<string, unknown>;
  }
  node[segments[segments.length - 1]!] = value;
}

/**
 * `u` applied to copies of `records` (an upsert's new record when `inserting`): update operators
 * by mingo, in one pass for all of them, after the checks MongoDB makes of each record's values,
 * or a whole replacement (which keeps the record's id when it names none). Answers plain JSON
 * records, as they are stored.
 */
export function applyUpdate(
  records: Array<Record<string, unknown>>,
  statement: UpdateStatement,
  place: string,
  inserting: boolean,
): Array<Record<string, unknown>> {
  if (statement.u.kind === 'replacement') {
    const replacement = statement.u.record;
    return records.map((record) =>
      replacement.id === undefined && record.id !== undefined
        ? { id: record.id, ...structuredClone(replacement) }
        : structuredClone(replacement),
    );
  }
  const operators = operatorsFor(statement.u, inserting);
  const copies = records.map((record) => {
    const copy = structuredClone(record);
    checkTargets(copy, operators, `${place}.u`);
    return copy;
  });
  if (copies.length === 0) return copies;
  try {
    // The filter only places a positional `$` (the records already matched it, by the store's rules).
    const condition = usesPositional(statement.u) ? statement.q : {};
    updateManyLinear(copies, condition, operators, {
      arrayFilters: statement.arrayFilters,
      // Every record gets its own copy of each value set (a later statement may change one of them).
      cloneMode: 'deep',
    });
  } catch (err) {
    throw new Unprocessable(`${place}.u: ${(err as Error).message}`);
  }
  // `$currentDate` sets dates: stored as their JSON text, as every value is.
  return '$currentDate' in operators
    ? copies.map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>)
    : copies;
}

/** The operators mingo runs: `$setOnInsert` is `$set` when inserting, and nothing otherwise. */
function operatorsFor(u: UpdateOperators, inserting: boolean): Record<string, Record<string, unknown>> {
  const { $setOnInsert, ...rest } = u.operators;
  if (!$setOnInsert || !inserting) return rest;
  return { ...rest, $set: { ...rest.$set, ...$setOnInsert } };
}

const ARRAY_OPERATORS = new Set(['$push', '$addToSet', '$pop', '$pull', '$pullAll']);
const NUMBER_OPERATORS = new Set(['$inc', '$mul', '$bit']);

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

/**
 * The record's values where the operators act, checked as MongoDB checks them (it refuses what
 * mingo would silently skip): numbers for `$inc` and `$mul`, lists for the list operators, and no
 * field created inside a value that is not an object.
 */
function checkTargets(
  record: Record<string, unknown>,
  operators: Record<string, Record<string, unknown>>,
  place: string,
) {
  for (const [operator, fields] of Object.entries(operators)) {
    for (const path of Object.keys(fields)) {
      const segments = path.split('.');
      let node: unknown = record;
      for (const [i, segment] of segments.entries()) {
        if (segment.startsWith('$')) break; // positional: the matched items decide
        const last = i === segments.length - 1;
        if (Array.isArray(node) && /^\d+$/.test(segment)) node = node[Number(segment)];
        else if (isObject(node)) node = node[segment];
        else {
          if (['$unset', '$rename', '$pull', '$pullAll', '$pop'].includes(operator)) break;
          throw new Unprocessable(
            `${place}.${operator}.${path}: cannot create the field '${segment}' inside ${segments.slice(0, i).join('.')}, which holds ${describeType(node)}`,
          );
        }
        if (node === undefined) break;
        if (!last) continue;
        if (NUMBER_OPERATORS.has(operator) && typeof node !== 'number')
          throw new Unprocessable(
            `${place}.${operator}.${path}: cannot apply ${operator} to the record's value, which is ${describeType(node)}, not a number`,
          );
        if (ARRAY_OPERATORS.has(operator) && !Array.isArray(node))
          throw new Unprocessable(
            `${place}.${operator}.${path}: the record's value must be a list for ${operator}, but it is ${describeType(node)}`,
          );
      }
    }
  }
}
