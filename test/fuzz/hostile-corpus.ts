/**
 * Hostile inputs for the fields that meet a regular expression: patterns with nested quantifiers
 * and alternations (for `$regex`, `.search` and the aggregation regex operators), and long runs
 * that make a backtracking pattern try every split (for values checked against a pattern: the
 * schema's slots, numerals, ids).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Patterns a backtracking engine can take exponential or polynomial time on, or RE2 refuses. */
export const HOSTILE_PATTERNS = [
  '(a+)+$',
  '(.*a){20}',
  '(a|a)*$',
  '(a|aa)+$',
  '((a*)*)*b',
  '(\\w+\\s?)+$',
  '^(([a-z])+.)+[A-Z]([a-z])+$',
  Array.from({ length: 300 }, (_, i) => `word${i}`).join('|'),
  `(${Array.from({ length: 60 }, (_, i) => `x${i}|`).join('')}soil)+`,
  '(?=soil)soil',
  '(a)\\1',
  'a{1000}{1000}',
  '('.repeat(200) + 'a' + ')'.repeat(200),
  'x'.repeat(1001),
  '^(a+)+$',
];

/** Values that make a backtracking pattern fail slowly: long runs ending in the wrong character. */
export function hostileValues(length = 3000): string[] {
  return [
    `${'a'.repeat(length)}!`,
    `${'a '.repeat(length / 2)}-`,
    `${'1'.repeat(length)}x`,
    `${'1.'.repeat(length / 2)}x`,
    `a: ${'a, '.repeat(length / 3)}`,
    `nmdc:${'a'.repeat(length)}!`,
    `http://${'a'.repeat(length)}`,
    `${'-'.repeat(length)}`,
    ' '.repeat(length),
  ];
}

const SCHEMA = path.resolve(
  import.meta.dirname,
  '../../src/schema/vendor/nmdc-schema-11.23.0/nmdc_materialized_patterns.schema.json',
);

interface JsonSchemaNode {
  $ref?: string;
  pattern?: string;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  properties?: Record<string, JsonSchemaNode>;
}

/**
 * Every collection, one class it holds and the slots of that class whose values meet a `pattern`
 * (directly, or in the items of a list): the fields hostile values are aimed at.
 */
export function patternSlots(): Array<{ collection: string; type: string; slot: string; list: boolean }> {
  const doc = JSON.parse(fs.readFileSync(SCHEMA, 'utf8')) as {
    $defs: Record<string, JsonSchemaNode>;
    properties: Record<string, JsonSchemaNode>;
  };
  const classOf = (ref: string | undefined) => ref?.replace('#/$defs/', '');
  const out: Array<{ collection: string; type: string; slot: string; list: boolean }> = [];
  for (const [collection, spec] of Object.entries(doc.properties)) {
    const items = spec.items;
    const name = classOf(items?.$ref ?? items?.anyOf?.[0]?.$ref);
    const cls = name ? doc.$defs[name] : undefined;
    if (!name || !cls?.properties) continue;
    for (const [slot, prop] of Object.entries(cls.properties)) {
      if (prop.pattern) out.push({ collection, type: `nmdc:${name}`, slot, list: false });
      else if (prop.items?.pattern) out.push({ collection, type: `nmdc:${name}`, slot, list: true });
    }
  }
  return out;
}
