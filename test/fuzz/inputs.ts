/**
 * Generators of hostile request inputs for the fuzz properties: filters, sorts, projections,
 * JSON operator trees (with `__proto__` / `constructor` keys kept as own keys), ids with odd
 * characters, database commands and token forms.
 */
import fc from 'fast-check';
import { ALLOWED_OPERATORS } from '../../src/query/guard/index.ts';

/** Number of runs per property; `FUZZ_RUNS` raises it for the long mode. */
export function runs(base: number): number {
  const env = Number(process.env.FUZZ_RUNS);
  return Number.isFinite(env) && env > 0 ? Math.max(base, env) : base;
}

export const SEED = Number(process.env.FUZZ_SEED ?? 20261123);

/** Keys that have caused prototype pollution in query engines and JSON mergers. */
export const POISON_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

const FIELD_NAMES = [
  'id',
  'name',
  'type',
  'ecosystem_category',
  'associated_studies',
  'depth.has_numeric_value',
  'lat_lon.latitude',
  'env_broad_scale.term.name',
  'has_input',
  'data_object_type',
  'file_size_bytes',
  '_id',
  '$where',
  'a..b',
  '.',
  '',
  ...POISON_KEYS,
];

export const oddText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    '',
    ' ',
    ':',
    '::',
    ',',
    ',,',
    '%',
    '%00',
    '\u0000',
    '\ud800',
    '\uffff',
    '../../etc/passwd',
    'nmdc:bsm-11-',
    'nmdc:bsm-11-a/b',
    'nmdc:sty-11-x?y#z',
    '>=',
    '<',
    '>=abc',
    '<=1e309',
    '>-0',
    'NaN',
    'Infinity',
    '*',
    '.*',
    '(a+)+$',
    '[',
    '\\',
    'a'.repeat(3000),
  ),
);

export const fieldName = fc.oneof(fc.constantFrom(...FIELD_NAMES), fc.string({ maxLength: 12 }));

/** Compact filter text: comma-separated `attribute:spec` pairs with broken pieces mixed in. */
export const compactFilter = fc
  .array(
    fc.oneof(
      fc
        .tuple(fieldName, fc.constantFrom('', '.search', '.search.search'), oddText)
        .map(([f, s, v]) => `${f}${s}:${v}`),
      fc
        .tuple(fieldName, fc.constantFrom('>', '>=', '<', '<='), fc.oneof(fc.double().map(String), oddText))
        .map(([f, op, v]) => `${f}:${op}${v}`),
      oddText,
    ),
    { maxLength: 5 },
  )
  .map((pairs) => pairs.join(','));

export const sortText = fc
  .array(
    fc
      .tuple(fieldName, fc.constantFrom('', ':asc', ':desc', ':ASC', ':sideways', ':', '::desc'))
      .map(([f, d]) => f + d),
    { maxLength: 4 },
  )
  .map((parts) => parts.join(','));

export const fieldsText = fc.array(fieldName, { maxLength: 6 }).map((f) => f.join(','));

/**
 * A JSON value written as text by hand, so that keys such as `__proto__` reach the server as
 * own keys of the parsed object (JSON.stringify of a JS object could never produce them).
 */
type Node =
  | { kind: 'obj'; pairs: Array<[string, Node]> }
  | { kind: 'arr'; items: Node[] }
  | { kind: 'leaf'; value: unknown };

export function writeJson(node: Node): string {
  switch (node.kind) {
    case 'obj':
      return `{${node.pairs.map(([k, v]) => `${JSON.stringify(k)}:${writeJson(v)}`).join(',')}}`;
    case 'arr':
      return `[${node.items.map(writeJson).join(',')}]`;
    case 'leaf':
      return JSON.stringify(node.value) ?? 'null';
  }
}

/** Every operator the guard accepts, plus refused ones it must answer with 422. */
const OPERATORS = [
  ...ALLOWED_OPERATORS,
  '$type',
  '$mod',
  '$where',
  '$expr',
  '$function',
  '$text',
  '$search',
  '$jsonSchema',
  '$unknown',
];

const leaf: fc.Arbitrary<Node> = fc
  .oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    oddText,
    fc.constantFrom('Plants', 'Soil', 'nmdc:bsm-11-000001', 'i', 'imsx', 'q', 'function(){return true}'),
  )
  .map((value) => ({ kind: 'leaf', value }) as Node);

const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...OPERATORS) },
  { weight: 3, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** Random operator trees: objects whose keys are operators, fields and poison keys. */
export const operatorTree: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(fc.tuple(key, tie('node')), { maxLength: 4 }).map((pairs) => ({ kind: 'obj', pairs }) as Node),
    fc.array(tie('node'), { maxLength: 4 }).map((items) => ({ kind: 'arr', items }) as Node),
  ),
})).node;

/** A top-level filter: an object tree, deep nesting, huge arrays, or text that is not a JSON object. */
export const jsonFilterText = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(key, operatorTree), { maxLength: 4 })
      .map((pairs) => writeJson({ kind: 'obj', pairs })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('$and', '$or', '$not', 'name', '$elemMatch'), fc.integer({ min: 10, max: 400 }))
      .map(([k, depth]) => `${`{"${k}":[`.repeat(depth)}{}${']}'.repeat(depth)}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('$in', '$nin', '$all'), fc.integer({ min: 1000, max: 20_000 }))
      .map(([op, n]) =>
        JSON.stringify({ id: { [op]: Array.from({ length: n }, (_, i) => `nmdc:bsm-11-${i}`) } }),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{"__proto__": {"polluted": "yes"}}',
      '{"constructor": {"prototype": {"polluted": "yes"}}}',
      '{"name": {"__proto__": {"$gt": ""}}}',
      '{"$where": "this.polluted = 1"}',
      '{"$expr": {"$function": {"body": "1", "args": [], "lang": "js"}}}',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(fc.json(), oddText, fc.constantFrom('{', '[]', 'null', '1', '"x"', '{"a":')),
  },
);

export const projectionText = fc.oneof(fieldsText, oddText);

/** Ids with characters that need percent-encoding (or break it). */
export const oddId = fc.oneof(
  fc
    .tuple(fc.constantFrom('nmdc:bsm-11-', 'nmdc:sty-11-', 'nmdc:dobj-11-', 'x:', ''), oddText)
    .map(([p, s]) => p + s),
  oddText,
);

/** Page tokens and cursors: forged, truncated, and real ones from elsewhere. */
export function tokenLike(real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...real),
    fc.constantFrom(...real).map((t) => t.slice(0, Math.max(1, t.length - 3))),
    fc.constantFrom(...real).map((t) => `${t}x`),
    fc.base64String({ maxLength: 60 }),
    fc.uuid(),
    oddText,
  );
}

const collectionName = fc.oneof(
  fc.constantFrom(
    'biosample_set',
    'study_set',
    'data_object_set',
    'nope_set',
    '',
    'system.users',
    '$cmd',
    '__proto__',
  ),
  fc.string({ maxLength: 10 }),
);

/** `/queries:run` bodies: each command with random operands, plus unknown commands. */
export function commandBody(cursorIds: string[]): fc.Arbitrary<string> {
  const tree = operatorTree.map(writeJson);
  const num = fc.oneof(fc.integer({ min: -5, max: 5000 }), fc.double(), oddText);
  return fc.oneof(
    fc
      .record(
        { find: collectionName, filter: tree, projection: tree, sort: tree, limit: num, batchSize: num },
        { requiredKeys: ['find'] },
      )
      .map((r) => objectText(r as Record<string, unknown>, ['filter', 'projection', 'sort'])),
    fc
      .record(
        { getMore: fc.oneof(fc.constantFrom(...cursorIds), oddText, fc.integer()), batchSize: num },
        { requiredKeys: ['getMore'] },
      )
      .map((r) => JSON.stringify(r)),
    fc
      .record({ count: collectionName, query: tree }, { requiredKeys: ['count'] })
      .map((r) => objectText(r, ['query'])),
    fc
      .record({
        aggregate: collectionName,
        pipeline: fc.array(tree, { maxLength: 3 }).map((a) => `[${a.join(',')}]`),
      })
      .map((r) => objectText(r, ['pipeline'])),
    fc
      .record({
        update: collectionName,
        updates: fc
          .array(
            fc.record({ q: tree, u: tree }).map((u) => objectText(u, ['q', 'u'])),
            { maxLength: 2 },
          )
          .map((a) => `[${a.join(',')}]`),
      })
      .map((r) => objectText(r, ['updates'])),
    fc
      .record({
        delete: collectionName,
        deletes: fc
          .array(
            fc.record({ q: tree, limit: num }).map((d) => objectText(d, ['q'])),
            { maxLength: 2 },
          )
          .map((a) => `[${a.join(',')}]`),
      })
      .map((r) => objectText(r, ['deletes'])),
    jsonFilterText,
  );
}

/** An object written as text where the named members are already JSON text. */
function objectText(record: Record<string, unknown>, raw: string[]): string {
  const members = Object.entries(record).map(
    ([k, v]) => `${JSON.stringify(k)}:${raw.includes(k) ? (v as string) : (JSON.stringify(v) ?? 'null')}`,
  );
  return `{${members.join(',')}}`;
}

/** `/token` forms: every grant type, missing and repeated fields, odd values. */
export const tokenForm = fc.record(
  {
    grant_type: fc.oneof(
      fc.constantFrom('password', 'client_credentials', 'authorization_code', 'refresh_token', ''),
      oddText,
    ),
    username: oddText,
    password: oddText,
    client_id: oddText,
    client_secret: oddText,
    scope: oddText,
  },
  { requiredKeys: [] },
);
