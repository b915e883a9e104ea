/**
 * Every `pattern` of the vendored NMDC JSON Schema on the linear-time engine agrees with V8 (the
 * engine Ajv used before) on generated values: short strings over each pattern's own characters,
 * date-like and URL-like strings, and every string of the schema's example records; and a value
 * that held V8 for seconds is decided at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { linearPattern, toRe2Syntax, UnsupportedPattern } from '../../src/validation/linear-patterns.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCHEMA = path.join(
  ROOT,
  'src/schema/vendor/nmdc-schema-11.23.0/nmdc_materialized_patterns.schema.json',
);

function schemaPatterns(): string[] {
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'pattern' && typeof value === 'string') found.add(value);
        else walk(value);
      }
    }
  };
  walk(JSON.parse(fs.readFileSync(SCHEMA, 'utf8')));
  return [...found];
}

function fixtureStrings(): string[] {
  const out = new Set<string>();
  const walk = (node: unknown): void => {
    if (typeof node === 'string') out.add(node);
    else if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') Object.values(node).forEach(walk);
  };
  const dir = path.join(ROOT, 'test/fixtures/nmdc-schema-examples');
  for (const sub of ['valid', 'invalid'])
    for (const name of fs.readdirSync(path.join(dir, sub)))
      walk(JSON.parse(fs.readFileSync(path.join(dir, sub, name), 'utf8')));
  return [...out];
}

const PATTERNS = schemaPatterns();
const DATE_PATTERN = PATTERNS.find((p) => p.includes('(?!\\d{2}\\b)'))!;
const URL_PATTERN = PATTERNS.find((p) => p.includes('[Dd][Oo][Ii]'))!;
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);

/** Characters worth trying against a pattern: its own literals plus separators, spaces and line ends. */
function alphabetOf(pattern: string): string[] {
  const own = [...new Set(pattern.replace(/\\[a-z]/gi, '').split(''))];
  return [
    ...new Set([
      ...own,
      'a',
      'Z',
      '0',
      '1',
      '5',
      '9',
      ' ',
      '-',
      ':',
      '.',
      ',',
      '/',
      '\n',
      '\r',
      '\u00a0',
      '\u2028',
      '\ufeff',
      '\t',
      'é',
    ]),
  ];
}

const compiled = new Map<string, { v8: RegExp; linear: { test(s: string): boolean } }>();

function agree(pattern: string, value: string): void {
  let both = compiled.get(pattern);
  if (!both) compiled.set(pattern, (both = { v8: new RegExp(pattern), linear: linearPattern(pattern) }));
  const v8 = both.v8.test(value);
  if (both.linear.test(value) !== v8)
    expect(both.linear.test(value), `${pattern} on ${JSON.stringify(value)}`).toBe(v8);
}

describe('schema patterns on the linear-time engine', () => {
  it('compiles every pattern of the schema', () => {
    expect(PATTERNS.length).toBeGreaterThan(90);
    for (const p of PATTERNS) expect(() => linearPattern(p), p).not.toThrow();
    expect(DATE_PATTERN).toBeDefined();
    expect(URL_PATTERN).toBeDefined();
  });

  it('agrees with V8 on every string of the schema example records', () => {
    // Up to 80 characters: on longer ones V8 itself backtracks for seconds with some patterns.
    const strings = fixtureStrings().filter((s) => s.length <= 80);
    expect(strings.length).toBeGreaterThan(500);
    for (const p of PATTERNS) for (const s of strings) agree(p, s);
  });

  it('agrees with V8 on short strings over each pattern’s own characters', () => {
    for (const p of PATTERNS) {
      const text = fc.string({ unit: fc.constantFrom(...alphabetOf(p)), maxLength: 24 });
      fc.assert(
        fc.property(text, (s) => agree(p, s)),
        { seed: SEED, numRuns: 100 },
      );
    }
  });

  it('agrees with V8 on the ISO 8601 pattern for date-like strings (separators, week, ordinal, times, zones)', () => {
    const piece = fc.constantFrom(
      '2020',
      '+2020',
      '-0044',
      '01',
      '12',
      '13',
      '00',
      '31',
      '32',
      '-',
      'W',
      'W01',
      'W53',
      '-3',
      '8',
      '001',
      '366',
      '367',
      'T',
      ' ',
      '\u2003',
      't',
      '10',
      '24',
      '23',
      '00',
      ':',
      '.',
      ',',
      '5',
      '59',
      '60',
      'Z',
      'z',
      '+05',
      '-0530',
      ':30',
      '\n',
      'x',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (pieces) => agree(DATE_PATTERN, pieces.join(''))),
      { seed: SEED, numRuns: 4000 },
    );
    for (const s of [
      '2020-01-01',
      '2020-01-01T10:30:00Z',
      '202001',
      '202001T10',
      '202001 10',
      '2020-01-01T24:0000',
      '20200101T1030.5:00',
      '2020-W01-3',
      '2020-366',
    ])
      agree(DATE_PATTERN, s);
  });

  it('agrees with V8 on the URL pattern that refuses doi.org', () => {
    const piece = fc.constantFrom(
      'http',
      'HTTPS',
      'hTtPs',
      '://',
      'doi',
      'DOI',
      '.org',
      '.',
      'org',
      'example',
      '/',
      '\n',
      '\u2028',
      'x',
      ' ',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (pieces) => agree(URL_PATTERN, pieces.join(''))),
      { seed: SEED, numRuns: 5000 },
    );
  });

  it('decides in linear time a value that held V8 for seconds', () => {
    const geo = PATTERNS.find((p) => p.startsWith('^([^\\s-]{1,2}|[^\\s-]+.+[^\\s-]+): '))!;
    const started = performance.now();
    expect(linearPattern(geo).test('a'.repeat(100_000))).toBe(false);
    // A bound far above RE2's few milliseconds and far below V8's minutes for this length.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('refuses, naming why, what RE2 cannot run', () => {
    expect(() => linearPattern('^(a)\\1$')).toThrow(UnsupportedPattern);
    expect(() => linearPattern('^(?=a)a$')).toThrow(/lookaround/);
    expect(toRe2Syntax('^a.b\\s$')).toBe(
      '^a[^\\n\\r\\x{2028}\\x{2029}]b[\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]$',
    );
  });
});
