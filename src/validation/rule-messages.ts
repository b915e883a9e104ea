/**
 * Turns Ajv's errors for one record into the messages the original service gives: the texts of
 * Python's `jsonschema` (`'name' is a required property`, `'x' does not match '^...$'`, values
 * quoted as Python prints them), each at a JSON pointer inside the record.
 *
 * Ajv reports every branch of a failed `anyOf`; the schema uses `anyOf` for "a class or null"
 * and for "one of these classes" (a term that is an OntologyClass or an NcbiTaxon...). A message
 * about the branch the value was evidently meant for says what is wrong; a list of every branch's
 * complaint does not. So a failed `anyOf` is replaced by the errors of the class the value's
 * `type` names, or, for "class or null", by the class's errors.
 */
import type { ErrorObject } from 'ajv/dist/2019.js';

export interface RuleViolation {
  /** JSON pointer inside the record (`''` for the record itself). */
  path: string;
  /** The rule broken, in the words of Python's jsonschema. */
  text: string;
  /** The text already says where (`QuantityValue at /...`): no place is appended to it. */
  placed?: boolean;
}

interface Item extends RuleViolation {
  keyword: string;
  /** For `type` items: the JSON types the value should have had. */
  types?: string[];
  /** For `additionalProperties` items: the unexpected names. */
  names?: string[];
}

/** Validates a value against a class by bare name (injected: the compiled schema lives elsewhere). */
export type ClassCheck = (className: string, value: unknown) => ErrorObject[];

const MAX_REPR = 120;
const MAX_LISTED = 12;

/**
 * Text from the payload (an id, a key, a unit) as a message quotes it: cut after MAX_REPR
 * characters, as a value's repr is. A message must not repeat a megabyte-long id once per rule
 * its record breaks (a public validation answer would be many times its request).
 */
export function clipped(s: string): string {
  return s.length > MAX_REPR ? `${s.slice(0, MAX_REPR)}...` : s;
}

function pyString(s: string): string {
  const body = clipped(s);
  return `'${body.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** A value as Python's `repr` prints it (what jsonschema's messages show), shortened when long. */
export function pyRepr(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'string') return pyString(value);
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return String(value);
  let text: string;
  if (depth > 2) text = Array.isArray(value) ? '[...]' : '{...}';
  else if (Array.isArray(value)) {
    const shown = value.slice(0, MAX_LISTED).map((v) => pyRepr(v, depth + 1));
    if (value.length > MAX_LISTED) shown.push('...');
    text = `[${shown.join(', ')}]`;
  } else {
    const entries = Object.entries(value as Record<string, unknown>);
    const shown = entries.slice(0, MAX_LISTED).map(([k, v]) => `${pyString(k)}: ${pyRepr(v, depth + 1)}`);
    if (entries.length > MAX_LISTED) shown.push('...');
    text = `{${shown.join(', ')}}`;
  }
  return text.length > MAX_REPR * 8 ? `${text.slice(0, MAX_REPR * 8)}...` : text;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const isUnder = (path: string, base: string) => path === base || path.startsWith(`${base}/`);

const quoteList = (names: string[]) => names.map((n) => pyString(n)).join(', ');

function typesOf(e: ErrorObject): string[] {
  const t = (e.params as { type?: string | string[] }).type;
  return Array.isArray(t) ? t : String(t).split(',');
}

/** One Ajv error as an item; undefined for errors that only summarise others. */
function itemOf(e: ErrorObject, path: string): Item | undefined {
  const p = e.params as Record<string, unknown>;
  const data = e.data;
  switch (e.keyword) {
    case 'if':
      return undefined; // the `then` branch's own errors are already listed
    case 'type': {
      const types = typesOf(e);
      return { path, keyword: 'type', types, text: `${pyRepr(data)} is not of type ${quoteList(types)}` };
    }
    case 'required':
      return {
        path,
        keyword: 'required',
        text: `${pyString(String(p.missingProperty))} is a required property`,
      };
    case 'additionalProperties': {
      const names = [String(p.additionalProperty)];
      return { path, keyword: 'additionalProperties', names, text: unexpectedText(names) };
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]) ?? [];
      return { path, keyword: 'enum', text: `${pyRepr(data)} is not one of ${pyRepr(allowed)}` };
    }
    case 'const':
      return { path, keyword: 'const', text: `${pyRepr(p.allowedValue)} was expected` };
    case 'pattern':
      return {
        path,
        keyword: 'pattern',
        text: `${pyRepr(data)} does not match ${pyString(String(p.pattern))}`,
      };
    case 'format':
      return { path, keyword: 'format', text: `${pyRepr(data)} is not a ${pyString(String(p.format))}` };
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum': {
      const words = {
        minimum: 'is less than the minimum of',
        exclusiveMinimum: 'is less than or equal to the minimum of',
        maximum: 'is greater than the maximum of',
        exclusiveMaximum: 'is greater than or equal to the maximum of',
      }[e.keyword];
      return { path, keyword: e.keyword, text: `${pyRepr(data)} ${words} ${String(p.limit)}` };
    }
    case 'minItems':
      return {
        path,
        keyword: 'minItems',
        text: p.limit === 1 ? `${pyRepr(data)} should be non-empty` : `${pyRepr(data)} is too short`,
      };
    case 'maxItems':
      return { path, keyword: 'maxItems', text: `${pyRepr(data)} is too long (at most ${String(p.limit)})` };
    case 'uniqueItems':
      return { path, keyword: 'uniqueItems', text: `${pyRepr(data)} has non-unique elements` };
    case 'not':
      return {
        path,
        keyword: 'not',
        text: `${pyRepr(data)} should not be valid under ${pyRepr(e.schema)}`,
      };
    default:
      return { path, keyword: e.keyword, text: `${pyRepr(data)}: ${e.message ?? e.keyword}` };
  }
}

function unexpectedText(names: string[]): string {
  return `Additional properties are not allowed (${quoteList(names)} ${names.length === 1 ? 'was' : 'were'} unexpected)`;
}

const REF_PREFIX = '#/$defs/';

/** What replaces a failed `anyOf`, given the (already condensed) errors of its branches. */
function anyOfItems(e: ErrorObject, path: string, branch: Item[], check: ClassCheck): Item[] {
  const branches = Array.isArray(e.schema) ? (e.schema as Array<{ $ref?: string }>) : [];
  const classes = branches
    .map((b) => (b.$ref?.startsWith(REF_PREFIX) ? b.$ref.slice(REF_PREFIX.length) : undefined))
    .filter((c): c is string => c !== undefined);
  const data = e.data;
  if (isPlainObject(data) && classes.length > 1) {
    const type = data.type;
    const chosen = classes.find((c) => type === `nmdc:${c}`);
    if (chosen) return condense(check(chosen, data), check, path);
    const allowed = classes.map((c) => `nmdc:${c}`);
    if (type === undefined)
      return [
        { path, keyword: 'required', text: `'type' is a required property (one of ${pyRepr(allowed)})` },
      ];
    return [
      { path: `${path}/type`, keyword: 'enum', text: `${pyRepr(type)} is not one of ${pyRepr(allowed)}` },
    ];
  }
  // "A class or null" (or "an enumeration or null"): a value of the wrong JSON type fails every
  // branch on its type alone, and says so once; otherwise the class's complaints are the ones.
  const here = (i: Item) => i.path === path && i.keyword === 'type';
  const rest = branch.filter((i) => !here(i));
  if (rest.length > 0) return rest;
  const types = [...new Set(branch.filter(here).flatMap((i) => i.types ?? []))];
  if (types.length === 0)
    return [{ path, keyword: 'anyOf', text: `${pyRepr(data)} is not valid under any of the given schemas` }];
  return [{ path, keyword: 'type', types, text: `${pyRepr(data)} is not of type ${quoteList(types)}` }];
}

function condense(errors: ErrorObject[], check: ClassCheck, base = ''): Item[] {
  const out: Item[] = [];
  /** Items that more unexpected properties were added to. */
  const grown = new Set<Item>();
  for (const e of errors) {
    const path = base + e.instancePath;
    if (e.keyword === 'anyOf') {
      // Ajv lists a failed anyOf's branch errors right before it, all at or under its path.
      let k = out.length;
      while (k > 0 && isUnder(out[k - 1]!.path, path)) k--;
      out.push(...anyOfItems(e, path, out.splice(k), check));
      continue;
    }
    const item = itemOf(e, path);
    if (!item) continue;
    const last = out[out.length - 1];
    if (
      item.keyword === 'additionalProperties' &&
      last?.keyword === 'additionalProperties' &&
      last.path === path
    ) {
      // Named together; the text is written once all are known (below): written again for each
      // name, 30,000 unexpected properties took 90 s.
      last.names!.push(...item.names!);
      grown.add(last);
      continue;
    }
    out.push(item);
  }
  for (const item of grown) item.text = unexpectedText(item.names!);
  return out;
}

/** The rules a record breaks, from Ajv's errors for it (one message per rule and place). */
export function ruleViolations(errors: ErrorObject[], check: ClassCheck): RuleViolation[] {
  const seen = new Set<string>();
  const out: RuleViolation[] = [];
  for (const { path, text } of condense(errors, check)) {
    const key = `${path}\u0000${text}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path, text });
  }
  return out;
}
