import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { conjunctsOf } from '../../search/filter-predicates.ts';
import {
  bodyTestFunction,
  bodyTestOf,
  bodyTestSql,
  describeBodyTest,
  foldAscii,
} from '../../src/query/planner/body-prefilter.ts';
import { compileFilter } from '../../src/store/filter.ts';

const testOf = (filter: Record<string, unknown>) => bodyTestOf(conjunctsOf(filter));

describe('body test of a filter', () => {
  it('requires the literal substrings of a case-sensitive regex as written', () => {
    expect(describeBodyTest(testOf({ 'geo_loc_name.has_raw_value': { $regex: 'Toolik' } }))).toBe(
      '="Toolik"',
    );
    expect(describeBodyTest(testOf({ name: { $regex: '^Germany: (Leipzig|Berlin)' } }))).toBe(
      '="Germany: Berlin" OR ="Germany: Leipzig"',
    );
    // As a GLOB, whose wildcards stand for themselves in brackets.
    expect(bodyTestSql(testOf({ v: { $regex: 'Tool\\*i?k\\[x' } }), 'body')).toEqual({
      sql: 'body GLOB +? OR body GLOB +?',
      params: ['*Tool[*]ik[[]x*', '*Tool[*]k[[]x*'],
    });
  });

  it('requires the literal substrings of other predicates lowercased', () => {
    expect(describeBodyTest(testOf({ name: { $regex: 'Leipzig', $options: 'i' } }))).toBe('"leipzig"');
  });

  it('cuts caseless atoms at k and s, which fold to non-ASCII letters', () => {
    expect(describeBodyTest(testOf({ name: { $regex: 'Toolik', $options: 'i' } }))).toBe('"tooli"');
    expect(describeBodyTest(testOf({ name: { $regex: 'sediments', $options: 'i' } }))).toBe('"ediment"');
    // The Kelvin sign matches k under a case-insensitive regex; the test must let it through.
    const filter = { name: { $regex: 'Toolik', $options: 'i' } };
    const doc = { id: 'x', name: 'TOOLI\u212A lake' };
    expect(compileFilter(filter)(doc)).toBe(true);
    expect(bodyTestFunction(testOf(filter))(JSON.stringify(doc))).toBe(true);
  });

  it('passes everything when no substring can be required', () => {
    expect(testOf({ name: { $regex: 'a.b' } })).toBe(true);
    expect(testOf({ name: { $regex: 'x"yz' } })).toBe(true);
    expect(testOf({ $or: [{ name: { $regex: 'abcd' } }, { name: { $regex: '.*' } }] })).toBe(true);
  });

  it('ANDs conjuncts and ORs branches', () => {
    expect(
      describeBodyTest(
        testOf({
          name: { $regex: 'river' },
          $or: [{ 'a.b': { $regex: 'tundra' } }, { 'a.c': { $regex: 'forest' } }],
        }),
      ),
    ).toBe('="river" AND (="tundra" OR ="forest")');
  });

  it('agrees in SQL and in JavaScript, and never rejects a match', () => {
    const db = new Database(':memory:');
    const values = [
      'Toolik Lake',
      'TOOLIK lake',
      '100% soil_core',
      'Germany: Leipzig',
      'germany: leipzig',
      'tundra biome',
      'café "quoted" \\ back',
      'nothing here',
      'a Tool*ik [x] and Tool?ik',
    ];
    const filters = [
      { v: { $regex: 'Toolik' } },
      { v: { $regex: 'toolik', $options: 'i' } },
      { v: { $regex: '100% soil_c' } },
      { v: { $regex: '^Germany: (Leipzig|Berlin)' } },
      { v: { $regex: 'tundra|forest' } },
      { v: { $regex: 'café' } },
      { v: { $regex: 'Tool\\*ik \\[x\\]' } },
      { v: { $regex: 'Tool\\?ik|LAKE' } },
      { $or: [{ v: { $regex: 'Leipzig' } }, { v: { $regex: 'lake', $options: 'i' } }] },
    ];
    for (const filter of filters) {
      const test = testOf(filter);
      const js = bodyTestFunction(test);
      const sql = bodyTestSql(test, 'body');
      const stmt = db.prepare(`SELECT ${sql.sql} AS ok FROM (SELECT ? AS body)`);
      for (const v of values) {
        const text = JSON.stringify({ id: 'r', v });
        const inSql = (stmt.get(...sql.params, text) as { ok: number }).ok === 1;
        expect(inSql, `${JSON.stringify(filter)} on ${v}`).toBe(js(text));
        // With the folded text given, as the estimator keeps it per sample.
        expect(
          js(text, () => foldAscii(text)),
          `${JSON.stringify(filter)} on ${v}`,
        ).toBe(inSql);
        if (compileFilter(filter)({ id: 'r', v }))
          expect(js(text), `${JSON.stringify(filter)} on ${v}`).toBe(true);
      }
    }
    db.close();
  });
});
