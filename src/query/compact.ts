/**
 * The compact syntax of the find endpoints: `filter=attr:spec,attr.search:text,depth>=...`,
 * `sort=attr:desc,other`, `fields=a,b.c`.
 */
import { RE2JS } from 're2js';
import { InvalidQuery } from '../errors.ts';
import type { Filter, Sort } from '../store/port.ts';

const FILTER_FORM = 'Filter must be of form: attribute:spec[,attribute:spec]*';
const SORT_FORM = 'Sort must be of form: attribute[:asc|:desc][,attribute[:asc|:desc]]*';

/** Comparison prefixes, longest first so `>=` is not read as `>` followed by `=...`. */
const COMPARISONS: Array<[prefix: string, operator: string]> = [
  ['>=', '$gte'],
  ['<=', '$lte'],
  ['>', '$gt'],
  ['<', '$lt'],
];

/**
 * A decimal numeral (`12`, `-3.5`, `.5`, `1e3`), on the linear-time engine: on V8 this pattern is
 * quadratic in a run of digits that ends in another character (80,000 digits: seconds).
 */
const DECIMAL_NUMERAL = RE2JS.compile('^[+-]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?$');

/** Whether the whole text is a decimal numeral. */
export function isDecimalNumeral(text: string): boolean {
  return DECIMAL_NUMERAL.test(text);
}

/** A text becomes a number when it parses as one entirely (`12`, `-3.5`, `1e3`), as the original does. */
export function coerceNumber(text: string): string | number {
  const trimmed = text.trim();
  if (trimmed === '' || !isDecimalNumeral(trimmed)) return text;
  return Number(trimmed);
}

/** Escapes every regular-expression metacharacter so a text matches literally. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function checkAttribute(attribute: string, form: string): void {
  if (attribute === '') throw new InvalidQuery(form);
  for (const segment of attribute.split('.')) {
    if (segment === '' || segment.startsWith('$')) {
      throw new InvalidQuery(
        `Invalid attribute "${attribute}": path segments must be non-empty and must not start with "$"`,
      );
    }
    if (segment === '__proto__' || segment === 'constructor' || segment === 'prototype') {
      throw new InvalidQuery(`Invalid attribute "${attribute}": "${segment}" is not an attribute name`);
    }
  }
}

function condition(spec: string): unknown {
  for (const [prefix, operator] of COMPARISONS) {
    if (spec.startsWith(prefix)) return { [operator]: coerceNumber(spec.slice(prefix.length)) };
  }
  return spec;
}

/** Several pairs on one attribute combine (`depth>=1,depth<=5` -> `{depth: {$gte: 1, $lte: 5}}`). */
function merge(filter: Filter, attribute: string, next: unknown): void {
  if (!(attribute in filter)) {
    filter[attribute] = next;
    return;
  }
  const asOperators = (value: unknown): Record<string, unknown> =>
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.keys(value).every((k) => k.startsWith('$'))
      ? (value as Record<string, unknown>)
      : { $eq: value };
  const current = asOperators(filter[attribute]);
  const addition = asOperators(next);
  const clash = Object.keys(addition).some((k) => k in current);
  if (clash) {
    const and = (filter.$and as unknown[] | undefined) ?? [];
    and.push({ [attribute]: next });
    filter.$and = and;
    return;
  }
  filter[attribute] = { ...current, ...addition };
}

/**
 * Parses the compact filter into a MongoDB filter. Each pair splits at its first colon (values may
 * contain colons, such as ids); `attr.search:text` is a case-insensitive substring match.
 */
export function parseCompactFilter(text: string | undefined): Filter {
  const filter: Filter = {};
  if (text === undefined || text.trim() === '') return filter;
  for (const rawPair of text.split(',')) {
    const pair = rawPair.trim();
    const colon = pair.indexOf(':');
    if (colon < 0) throw new InvalidQuery(FILTER_FORM);
    let attribute = pair.slice(0, colon).trim();
    const spec = pair.slice(colon + 1).trim();
    let value: unknown;
    if (attribute.endsWith('.search')) {
      attribute = attribute.slice(0, -'.search'.length);
      value = { $regex: escapeRegex(spec), $options: 'i' };
    } else {
      value = condition(spec);
    }
    checkAttribute(attribute, FILTER_FORM);
    merge(filter, attribute, value);
  }
  return filter;
}

/** Parses `attr[:asc|desc],...` into sort keys. */
export function parseCompactSort(text: string | undefined): Sort | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const sort: Sort = [];
  for (const rawKey of text.split(',')) {
    const key = rawKey.trim();
    const [attribute, direction, ...rest] = key.split(':').map((s) => s.trim());
    if (rest.length > 0 || attribute === undefined) throw new InvalidQuery(SORT_FORM);
    checkAttribute(attribute, SORT_FORM);
    if (direction === undefined || direction === 'asc') sort.push([attribute, 1]);
    else if (direction === 'desc') sort.push([attribute, -1]);
    else
      throw new InvalidQuery(
        `Sort direction "${direction}" of "${attribute}" must be asc or desc. ${SORT_FORM}`,
      );
  }
  return sort;
}

/** Parses a comma-separated projection; `id` is always included. */
export function parseFieldList(text: string | undefined): string[] | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const fields = text
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  for (const field of fields) checkAttribute(field, 'Fields must be of form: attribute[,attribute]*');
  return ['id', ...fields.filter((f) => f !== 'id')];
}
