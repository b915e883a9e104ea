/**
 * Counting the candidates of a one-path `$regex` filter from SQL-extracted values gives exactly
 * the compiled filter's count, whatever shape the records have at the path.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/store/filter.ts';
import type { Doc } from '../../src/store/port.ts';
import { pathRegexOf } from '../../src/store/sqlite/path-regex-count.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

const C = 'biosample_set';
const shapes: Array<Record<string, unknown>> = [
  { geo: { raw: 'USA: Alaska, Toolik Lake' } },
  { geo: { raw: 'usa: alaska, toolik lake' } },
  { geo: { raw: ['Somewhere', 'Toolik Lake'] } },
  { geo: [{ raw: 'Toolik' }, { raw: 'Kellogg' }] },
  { geo: [{ raw: ['x', 'Toolik'] }] },
  { geo: { raw: 42 } },
  { geo: { raw: { nested: 'Toolik' } } },
  { geo: 'Toolik' },
  { geo: null },
  {},
  { geo: { raw: 'Kellogg' } },
  { geo: { raw: 'Tooli\u212A Lake' } },
];
const docs: Doc[] = Array.from({ length: 1200 }, (_, i) => ({
  id: `nmdc:bsm-11-${String(i).padStart(5, '0')}`,
  ...shapes[i % shapes.length],
}));

describe('counting one-path regex candidates', () => {
  let dir: string;
  let store: SqliteDocumentStore;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-path-regex-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    await store.upsertMany(C, docs);
  });

  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('accepts only a lone $regex on a plain dotted path', () => {
    expect(pathRegexOf({ 'geo.raw': { $regex: 'x', $options: 'i' } })).toBeDefined();
    expect(pathRegexOf({ 'geo.raw': { $regex: 'x' }, other: 1 })).toBeUndefined();
    expect(pathRegexOf({ 'geo.0.raw': { $regex: 'x' } })).toBeUndefined();
    expect(pathRegexOf({ 'geo.raw': { $regex: 'x', $ne: 'y' } })).toBeUndefined();
    expect(pathRegexOf({ $or: [{ a: { $regex: 'x' } }] })).toBeUndefined();
  });

  it('counts exactly what the compiled filter matches, for every shape', async () => {
    const candidates = docs.filter((_, i) => i % 5 !== 1).map((d) => d.id);
    const inCandidates = new Set(candidates);
    for (const filter of [
      { 'geo.raw': { $regex: 'Toolik' } },
      { 'geo.raw': { $regex: 'toolik', $options: 'i' } },
      { 'geo.raw': { $regex: '^USA' } },
      { geo: { $regex: 'Toolik' } },
      { 'geo.raw.nested': { $regex: 'T' } },
    ]) {
      const predicate = compileFilter(filter);
      const expected = docs.filter((d) => inCandidates.has(d.id) && predicate(d)).length;
      expect(expected).toBeGreaterThan(0);
      expect(await store.count(C, filter, candidates), JSON.stringify(filter)).toBe(expected);
    }
  });

  it('walks in id order to the same pages as the compiled filter, with or without a body test', async () => {
    for (const filter of [
      { 'geo.raw': { $regex: 'Toolik' } },
      { 'geo.raw': { $regex: 'toolik', $options: 'i' } },
      { geo: { $regex: 'Toolik' } },
      { 'geo.raw.nested': { $regex: 'T' } },
    ]) {
      const predicate = compileFilter(filter);
      const matches = docs.filter((d) => predicate(d));
      for (const bodyTest of [undefined, { sql: "x.body LIKE +? ESCAPE '\\'", params: ['%t%'] }]) {
        const access = { path: 'id-walk' as const, bodyTest };
        for (const options of [
          { limit: 7 },
          { skip: 5, limit: 30 },
          {},
          { afterId: docs[600]!.id, limit: 9 },
        ]) {
          const from = matches.filter((d) => !options.afterId || d.id > options.afterId);
          const skip = (options as { skip?: number }).skip ?? 0;
          const limit = (options as { limit?: number }).limit;
          expect(
            await store.find(C, filter, { ...options, access }),
            JSON.stringify({ filter, options, bodyTest }),
          ).toEqual(from.slice(skip, limit ? skip + limit : undefined));
        }
        expect(await store.count(C, filter, undefined, { access })).toBe(matches.length);
      }
    }
  });
});
