/**
 * Differential test: thousands of random `.search`-style and `$regex` queries through the
 * planner (index narrows, store decides) must return exactly what a brute-force evaluation of
 * the same filter over every record returns, in the same order, with the same counts — also
 * after updates and deletes, and with an index that lags behind the store.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateRecords, prng } from '../../src/data/generator.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { sortDocs } from '../../src/store/ordering.ts';
import type { Doc, Filter, Sort } from '../../src/store/port.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { RecordWriter } from '../../search/writer.ts';
import { checkCollection, hasDrift } from '../../search/maintenance.ts';
import { escapeRegex } from '../../search/predicates.ts';

const C = 'biosample_set';
const STRING_PATHS = [
  'name',
  'description',
  'samp_name',
  'id',
  'env_broad_scale.term.name',
  'env_local_scale.has_raw_value',
  'geo_loc_name.has_raw_value',
  'ecosystem_type',
  'specific_ecosystem',
  'alternative_identifiers',
  'collection_date.has_raw_value',
];
const SORTS: Array<Sort | undefined> = [
  undefined,
  [['name', 1]],
  [['depth.has_numeric_value', -1]],
  [
    ['ecosystem_type', 1],
    ['collection_date.has_raw_value', -1],
  ],
];

function valuesAt(doc: unknown, segments: string[]): string[] {
  if (segments.length === 0) {
    if (typeof doc === 'string') return [doc];
    return Array.isArray(doc) ? doc.filter((v): v is string => typeof v === 'string') : [];
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return [];
  return valuesAt((doc as Record<string, unknown>)[segments[0]!], segments.slice(1));
}

/** Random filters built from real values so that most queries have matches. */
function queryMaker(docs: Doc[], rand: () => number) {
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const sampleValue = (p: string): string => {
    for (let i = 0; i < 20; i++) {
      const vs = valuesAt(pick(docs), p.split('.'));
      if (vs.length) return pick(vs);
    }
    return 'zzz';
  };
  const slice = (s: string, min: number, max: number) => {
    const len = Math.min(s.length, min + Math.floor(rand() * (max - min + 1)));
    const start = Math.floor(rand() * Math.max(1, s.length - len + 1));
    return s.slice(start, start + len);
  };
  const flipCase = (s: string) =>
    [...s].map((c) => (rand() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');

  const regexOn = (p: string): Filter => {
    const v = sampleValue(p);
    switch (Math.floor(rand() * 10)) {
      case 0: // the compact `.search` form
        return { [p]: { $regex: escapeRegex(flipCase(slice(v, 1, 10))), $options: 'i' } };
      case 1: // case-sensitive literal
        return { [p]: { $regex: escapeRegex(slice(v, 3, 12)) } };
      case 2: // anchored prefix
        return { [p]: { $regex: `^${escapeRegex(v.slice(0, 2 + Math.floor(rand() * 8)))}` } };
      case 3: // alternation
        return {
          [p]: {
            $regex: `${escapeRegex(slice(v, 3, 6))}|${escapeRegex(slice(sampleValue(p), 3, 6))}`,
            $options: 'i',
          },
        };
      case 4: {
        // a class around one character
        const s = slice(v, 4, 8);
        const i = Math.floor(rand() * s.length);
        return {
          [p]: {
            $regex: `${escapeRegex(s.slice(0, i))}[${escapeRegex(s[i]!)}xq]${escapeRegex(s.slice(i + 1))}`,
          },
        };
      }
      case 5: {
        // no usable trigram: a.b
        const s = slice(v, 3, 3);
        return { [p]: { $regex: `${escapeRegex(s[0] ?? 'a')}.${escapeRegex(s[2] ?? 'b')}` } };
      }
      case 6: // anchored at both ends, repetition
        return { [p]: { $regex: `^${escapeRegex(v.slice(0, 3))}.*${escapeRegex(v.slice(-2))}$` } };
      case 8: {
        // literals around a class of digits, as `sample 1234[0-9] `: strings holding every
        // trigram of the literals and not the pattern are found by the index and tested
        const s = slice(v, 5, 14);
        const i = s.search(/\d/);
        const at = i >= 0 ? i : Math.floor(s.length / 2);
        return {
          [p]: { $regex: `${escapeRegex(s.slice(0, at))}[0-9]${escapeRegex(s.slice(at + 1))}` },
        };
      }
      case 7: // nothing matches
        return { [p]: { $regex: `qqz${Math.floor(rand() * 1000)}` } };
      default: // digits and word classes
        return {
          [p]: { $regex: `${escapeRegex(slice(v, 3, 5))}\\w*\\d?`, $options: rand() < 0.5 ? 'i' : '' },
        };
    }
  };

  return (): Filter => {
    const base = regexOn(pick(STRING_PATHS));
    switch (Math.floor(rand() * 8)) {
      case 0:
        return { $and: [base, regexOn(pick(STRING_PATHS))] };
      case 1:
        return { $or: [base, regexOn(pick(STRING_PATHS))] };
      case 2:
        return { ...base, ecosystem_type: sampleValue('ecosystem_type') };
      case 3:
        return { $and: [base, { 'depth.has_numeric_value': { $gte: rand() } }] };
      case 4:
        return { $or: [base, { ecosystem_category: 'Aquatic' }] };
      case 5:
        return { $nor: [base], ...regexOn('name') };
      case 6:
        return {
          alternative_identifiers: { $elemMatch: { $regex: `^${pick(['gold', 'igsn', 'img'])}:` } },
          ...base,
        };
      default:
        return base;
    }
  };
}

/** Every matching id in result order. */
function bruteForce(docs: Doc[], filter: Filter, sort: Sort | undefined): string[] {
  const test = compileFilter(filter);
  const matched = docs.filter((d) => test(d));
  const ordered = sort
    ? sortDocs(matched, [...sort, ['id', 1]])
    : matched.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return ordered.map((d) => d.id);
}

function biosamples(count: number, seed: number): Doc[] {
  const out: Doc[] = [];
  for (const r of generateRecords({ studies: 8, biosamples: count, dataObjects: 0, seed })) {
    if (r.collection === C) out.push(r.doc);
  }
  return out;
}

interface Setup {
  store: SqliteDocumentStore;
  planner: QueryPlanner;
  writer: RecordWriter;
  index: FtsSearchIndex;
  dir: string;
}

async function open(mode: 'hooked' | 'lagging'): Promise<Setup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-diff-'));
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const index =
    mode === 'hooked'
      ? FtsSearchIndex.attachTo(store)
      : new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
  // Small limits so that both narrowed and given-up (ALL) plans are exercised.
  const planner = new QueryPlanner(store, index, { candidateShare: 0.2, maxCandidates: 50_000 });
  return { store, planner, writer: new RecordWriter(store, index), index, dir };
}

async function runQueries(s: Setup, docs: Doc[], n: number, seed: number): Promise<{ narrowed: number }> {
  const rand = prng(seed);
  const next = queryMaker(docs, rand);
  let narrowed = 0;
  for (let i = 0; i < n; i++) {
    const filter = next();
    const sort = SORTS[Math.floor(rand() * SORTS.length)];
    const skip = rand() < 0.3 ? Math.floor(rand() * 20) : 0;
    const limit = 1 + Math.floor(rand() * 40);
    const plan = await s.planner.plan(C, filter);
    if (plan.candidates !== null) narrowed++;
    const got = await s.planner.find(C, filter, {
      sort: sort ? [...sort, ['id', 1]] : undefined,
      skip,
      limit,
    });
    const count = await s.planner.count(C, filter);
    const expected = bruteForce(docs, filter, sort);
    const label = JSON.stringify({ filter, sort, skip, limit });
    expect(
      got.map((d) => d.id),
      label,
    ).toEqual(expected.slice(skip, skip + limit));
    expect(count, label).toBe(expected.length);
  }
  return { narrowed };
}

describe('planner results equal a brute-force evaluation', () => {
  let s: Setup;
  let docs: Doc[];

  beforeAll(async () => {
    s = await open('hooked');
    docs = biosamples(600, 11);
    await s.writer.upsert(C, docs);
  });
  afterAll(async () => {
    await s.store.close();
    fs.rmSync(s.dir, { recursive: true, force: true });
  });

  it('for 1,000 random regex and text-search queries with sort and paging', async () => {
    const { narrowed } = await runQueries(s, docs, 1000, 20240611);
    // Many queries must actually have been narrowed by the index, or the test proves little.
    expect(narrowed).toBeGreaterThan(300);
  }, 120_000);

  it('after updates and deletes through the writer, with no index drift', async () => {
    const rand = prng(5);
    const byId = new Map(docs.map((d) => [d.id, d]));
    for (let round = 0; round < 4; round++) {
      const changed = docs
        .filter(() => rand() < 0.05)
        .map((d) => ({
          ...d,
          name: `Renamed ${round} ${String(d.name).split(' ').reverse().join(' ')}`,
          description: undefined,
        }));
      const cleaned = changed.map((d) => JSON.parse(JSON.stringify(d)) as Doc);
      await s.writer.upsert(C, cleaned);
      for (const d of cleaned) byId.set(d.id, d);
      const victims = docs.filter(() => rand() < 0.02).map((d) => d.id);
      const removed = await s.writer.delete(C, { id: { $in: victims } });
      for (const id of removed) byId.delete(id);
      docs = [...byId.values()];
      await runQueries(s, docs, 100, 100 + round);
    }
    const report = await checkCollection(s.store, s.index, C);
    expect(report.checked).toBe(docs.length);
    expect(hasDrift(report), JSON.stringify(report.counts)).toBe(false);
  }, 120_000);
});

describe('an index that lags behind the store', () => {
  it('still returns exact results: writes since its watermark are always candidates', async () => {
    const s = await open('lagging');
    try {
      let docs = biosamples(500, 3);
      await s.writer.upsert(C, docs);
      expect(await s.index.watermark()).toBeGreaterThan(0);
      // Writes straight to the store: the index has not seen them.
      const renamed = docs.slice(0, 100).map((d) => ({ ...d, name: `Zyxwvut core ${d.id}` }));
      await s.store.upsertMany(C, renamed);
      await s.store.deleteMany(C, { id: { $in: docs.slice(100, 160).map((d) => d.id) } });
      const byId = new Map(docs.map((d) => [d.id, d]));
      for (const d of renamed) byId.set(d.id, d);
      for (const d of docs.slice(100, 160)) byId.delete(d.id);
      docs = [...byId.values()];
      expect(await s.planner.count(C, { name: { $regex: 'zyxwvut', $options: 'i' } })).toBe(100);
      await runQueries(s, docs, 200, 77);
      const drift = await checkCollection(s.store, s.index, C);
      expect(drift.counts).toEqual({ missing: 0, stale: 100, extra: 60 });
      // A write through the writer catches the index up.
      await s.writer.upsert(C, [docs[0]!]);
      expect(hasDrift(await checkCollection(s.store, s.index, C))).toBe(false);
    } finally {
      await s.index.close();
      await s.store.close();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  }, 120_000);
});
