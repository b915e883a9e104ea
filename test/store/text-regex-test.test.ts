import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/store/filter.ts';
import type { Doc, Filter } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { stringAt, textTestOf } from '../../src/store/sqlite/text-regex-test.ts';

const RECORDS: Doc[] = [
  { id: 'a', name: 'Soil sample 1 from Toolik', geo_loc_name: { has_raw_value: 'USA: Alaska, Toolik Lake' } },
  {
    id: 'b',
    name: 'Water sample 2',
    env: { term: { name: 'tundra' } },
    geo_loc_name: { has_raw_value: 'Germany' },
  },
  { id: 'c', name: ['Soil core', 'sample 3'], geo_loc_name: [{ has_raw_value: 'Toolik' }] },
  { id: 'd', name: 'quote " and \\ back\\slash \u00e9 \ud800 lone', nested: { 'odd key "q"': 'x' } },
  { id: 'e', name: 12, geo_loc_name: null },
  { id: 'f', title: 'no name', geo_loc_name: { other: 'Toolik' } },
  { id: 'g', name: { has_raw_value: 'sample' }, 'dotted.key': 'sample' },
  // JSON.parse makes "__proto__" an own key, as a stored record read back has it.
  JSON.parse('{"id":"h","__proto__":"proto value","constructor":"ctor","name":"ane"}') as Doc,
];

describe('reading a string off stored JSON text', () => {
  it('finds a path through objects and decodes escapes, and nothing through arrays or other values', () => {
    const text = (i: number) => JSON.stringify(RECORDS[i]);
    expect(stringAt(text(0), ['name'])).toBe('Soil sample 1 from Toolik');
    expect(stringAt(text(0), ['geo_loc_name', 'has_raw_value'])).toBe('USA: Alaska, Toolik Lake');
    expect(stringAt(text(1), ['env', 'term', 'name'])).toBe('tundra');
    expect(stringAt(text(2), ['name'])).toBeUndefined(); // an array
    expect(stringAt(text(2), ['geo_loc_name', 'has_raw_value'])).toBeUndefined();
    expect(stringAt(text(3), ['name'])).toBe('quote " and \\ back\\slash \u00e9 \ud800 lone');
    expect(stringAt(text(3), ['nested', 'odd key "q"'])).toBe('x');
    expect(stringAt(text(4), ['name'])).toBeUndefined(); // a number
    expect(stringAt(text(4), ['geo_loc_name', 'has_raw_value'])).toBeUndefined(); // null
    expect(stringAt(text(5), ['name'])).toBeUndefined(); // missing
    expect(stringAt(text(6), ['name'])).toBeUndefined(); // an object
    expect(stringAt(text(7), ['__proto__'])).toBe('proto value');
    expect(stringAt(text(7), ['name'])).toBe('ane');
    expect(stringAt(' { "a" : { "b" :"x y" } } ', ['a', 'b'])).toBe('x y');
    expect(stringAt('{"a": [1, {"b": "}"}], "c": "d"}', ['c'])).toBe('d');
    expect(stringAt('{"a": "unterminated', ['a'])).toBeUndefined();
    // Keys are compared as decoded: escapes in the text, backslashes and quotes in the key.
    expect(stringAt('{"x": 1, "na\\u006de": "escaped"}', ['name'])).toBe('escaped');
    expect(stringAt('{"nam": "short", "names": "long", "name": "it"}', ['name'])).toBe('it');
    expect(stringAt('{"a\\\\b": "one", "a\\\\\\\\b": "two"}', ['a\\b'])).toBe('one');
    expect(stringAt('{"a\\\\b": "one", "a\\\\\\\\b": "two"}', ['a\\\\b'])).toBe('two');
    expect(stringAt('{"a\\\\n": "no", "a\\n": "yes"}', ['a\\n'])).toBe('no');
    expect(stringAt('{"a\\\\n": "no", "a\\n": "yes"}', ['a\n'])).toBe('yes');
    // As long as the key, with the key's own characters, and yet another key (a new line).
    expect(stringAt('{"a\\n": "new line", "a\\\\n": "backslash"}', ['a\\n'])).toBe('backslash');
    expect(stringAt('{"k": "\\\\", "q\\"": "\\"\\\\\\"", "z": "end"}', ['q"'])).toBe('"\\"');
    expect(stringAt('{"k": "\\\\", "q\\"": "\\"\\\\\\"", "z": "end"}', ['z'])).toBe('end');
  });

  it('reads what parsing reads, across generated records and paths', () => {
    // Keys and strings that JSON writes with escapes, as written by JSON.stringify (compact and
    // indented) and with \u escapes where none were needed.
    const KEYS = ['a', 'ab', 'b', 'a"b', 'a\\b', 'a\nb', 'a\\nb', '\u00e9', '\u2028', 'ba', '__proto__'];
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const value = (depth: number): unknown => {
      switch (next(depth > 2 ? 4 : 6)) {
        case 0:
          return KEYS[next(KEYS.length)]! + '\\"' + next(100);
        case 1:
          return next(1000) / 7;
        case 2:
          return next(2) === 0 ? null : true;
        case 3:
          return 'v' + next(10);
        case 4:
          return Array.from({ length: next(3) }, () => value(depth + 1));
        default:
          return object(depth + 1);
      }
    };
    const object = (depth: number): Record<string, unknown> => {
      const o: Record<string, unknown> = {};
      for (let k = next(5); k > 0; k--)
        Object.defineProperty(o, KEYS[next(KEYS.length)]!, {
          value: value(depth),
          enumerable: true,
          configurable: true,
          writable: true,
        });
      return o;
    };
    const parsedAt = (v: unknown, segments: string[]): string | undefined => {
      for (const s of segments) {
        if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, s)) return undefined;
        v = (v as Record<string, unknown>)[s];
      }
      return typeof v === 'string' ? v : undefined;
    };
    let found = 0;
    for (let n = 0; n < 3000; n++) {
      const record = object(0);
      const compact = JSON.stringify(record);
      const texts = [compact, JSON.stringify(record, null, 1), compact.replace(/a/g, '\\u0061')];
      const segments = Array.from({ length: 1 + next(3) }, () => KEYS[next(KEYS.length)]!);
      const expected = parsedAt(JSON.parse(compact), segments);
      if (expected !== undefined) found++;
      for (const text of texts)
        expect([text, segments, stringAt(text, segments)]).toEqual([text, segments, expected]);
    }
    expect(found).toBeGreaterThan(50);
  });

  it('passes over unparsed only the records the filter cannot match', () => {
    const filters: Filter[] = [
      { name: { $regex: 'a.e' } },
      { name: { $regex: 'SAMPLE', $options: 'i' } },
      { 'geo_loc_name.has_raw_value': { $regex: 'Toolik' } },
      { 'env.term.name': { $regex: '^tun' } },
      { $and: [{ name: { $regex: 'sample' } }, { 'geo_loc_name.has_raw_value': { $regex: 'Germany' } }] },
      { name: { $regex: '\ud800' } },
      { name: { $regex: '" and \\\\' } },
      { constructor: { $regex: 'ctor' } },
      { 'dotted.key': { $regex: 'sample' } },
    ];
    let decided = 0;
    for (const filter of filters) {
      const test = textTestOf(filter)!;
      const matches = compileFilter(filter);
      for (const doc of RECORDS) {
        // Never 'no' for a match, never 'yes' for a record that does not match.
        const read = test(JSON.stringify(doc));
        const label = JSON.stringify([filter, doc.id]);
        if (matches(doc)) expect(read, label).not.toBe('no');
        else expect(read, label).not.toBe('yes');
        if (read === 'yes') decided++;
      }
    }
    expect(decided).toBeGreaterThan(8);
    const aE = textTestOf({ name: { $regex: 'a.e' } })!;
    // a: "Soil sample 1 from Toolik" has no a.e; b: "Water sample 2" has "ate"; c: an array; d: no
    // a.e; e: a number; f: no name; g: an object; h: "ane".
    expect(RECORDS.map((d) => aE(JSON.stringify(d)))).toEqual([
      'no',
      'yes',
      'parse',
      'no',
      'parse',
      'parse',
      'parse',
      'yes',
    ]);
  });

  it('decides a record unparsed only when the filter is nothing but such conditions, each read', () => {
    const text = JSON.stringify(RECORDS[1]); // name "Water sample 2", geo_loc_name "Germany"
    const read = (filter: Filter) => textTestOf(filter)!(text);
    expect(read({ name: { $regex: 'sample' } })).toBe('yes');
    expect(read({ name: { $regex: 'SAMPLE', $options: 'i' } })).toBe('yes');
    expect(
      read({ $and: [{ name: { $regex: 'sample' } }, { 'geo_loc_name.has_raw_value': { $regex: '^Ger' } }] }),
    ).toBe('yes');
    // Anything else in the filter is left to it: another condition, another operator beside the
    // $regex, a $regex on a path with an array position, a path the text does not hold.
    expect(read({ name: { $regex: 'sample' }, id: 'b' })).toBe('parse');
    expect(read({ name: { $regex: 'sample', $ne: 'x' } })).toBe('parse');
    expect(read({ name: { $regex: 'sample' }, 'env.term.0': { $regex: 't' } })).toBe('parse');
    expect(read({ name: { $regex: 'sample' }, title: { $regex: 'x' } })).toBe('parse');
    expect(read({ $and: [{ name: { $regex: 'sample' } }, { id: 'b' }] })).toBe('parse');
    // A string there that fails decides it the other way, whatever else the filter holds.
    expect(read({ name: { $regex: 'soil' }, id: 'b' })).toBe('no');
  });

  it('has nothing to test without a top-level $regex on a plain path', () => {
    expect(textTestOf({})).toBeUndefined();
    expect(textTestOf({ name: 'x' })).toBeUndefined();
    expect(textTestOf({ $or: [{ name: { $regex: 'x' } }] })).toBeUndefined();
    expect(textTestOf({ 'name.0': { $regex: 'x' } })).toBeUndefined();
    expect(textTestOf({ name: { $not: { $regex: 'x' } } })).toBeUndefined();
    expect(textTestOf({ name: { $regex: 'x', literal: 1 } })).toBeUndefined();
  });
});

describe('a walk in id order with a $regex', () => {
  it('parses only the records whose string passes, and answers as the full filter does', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'text-regex-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    try {
      const docs = Array.from({ length: 200 }, (_, i) => ({
        id: `r${String(i).padStart(3, '0')}`,
        name: i % 3 === 0 ? `Soil sample ${i}` : `Core ${i}`,
      }));
      await store.upsertMany('biosample_set', docs);
      const filter = { name: { $regex: 'a.p' } };
      const before = store.counters.bodiesParsed;
      const page = await store.find('biosample_set', filter, { limit: 10, access: { path: 'id-walk' } });
      expect(page.map((d) => d.id)).toEqual(
        docs
          .filter((d) => /a.p/.test(d.name))
          .slice(0, 10)
          .map((d) => d.id),
      );
      // 28 records walked to find 10 matches, none of them parsed: the records' strings decide
      // the filter. Answered whole, the page is parsed only to be answered.
      expect(store.counters.bodiesParsed - before).toBe(10);
      const asText = await store.find('biosample_set', filter, {
        limit: 10,
        access: { path: 'id-walk' },
        asText: true,
      });
      expect(asText.map((d) => d.id)).toEqual(page.map((d) => d.id));
      expect(store.counters.bodiesParsed - before).toBe(10);
      // With another condition beside it the matches are parsed and decided by the filter.
      const other = await store.find(
        'biosample_set',
        { ...filter, id: { $ne: 'r001' } },
        { limit: 10, access: { path: 'id-walk' }, asText: true },
      );
      expect(other.map((d) => d.id)).toEqual(page.map((d) => d.id));
      expect(store.counters.bodiesParsed - before).toBe(20);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
