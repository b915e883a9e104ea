import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { loadRecords } from '../../src/data/loader.ts';
import { checkInputs, recordProblem } from '../../src/data/record-checks.ts';
import { formatOfFile, MAX_RECORD_CHARS } from '../../src/data/record-reader.ts';
import { databaseJsonChunks, generateDatabase, generateRecords } from '../../src/data/generator.ts';
import type { Doc } from '../../src/store/port.ts';

/** A stream delivering text in small pieces, so records straddle chunk boundaries. */
function chunked(text: string, size = 7): Readable {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return Readable.from(pieces);
}

describe('loadRecords', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-load-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const options = { studies: 3, biosamples: 20, dataObjects: 50, seed: 5 };

  it('loads NMDC Database JSON streamed in small chunks, batch by batch, into the store and the index', async () => {
    const db = generateDatabase(options);
    const indexed: Record<string, number> = {};
    const text = [...databaseJsonChunks(generateRecords(options))].join('');
    const summary = await loadRecords({
      store,
      searchIndex: { index: async (c, docs) => void (indexed[c] = (indexed[c] ?? 0) + docs.length) },
      input: chunked(text),
      format: { kind: 'database' },
      batchSize: 8,
    });
    const expected = Object.fromEntries(Object.entries(db).map(([c, docs]) => [c, docs.length]));
    expect(summary.counts).toEqual(expected);
    expect(indexed).toEqual(expected);
    expect(summary.inserted).toBe(Object.values(expected).reduce((a, b) => a + b, 0));
    expect(summary.rejected).toEqual([]);
    for (const [collection, docs] of Object.entries(db)) {
      expect(await store.find(collection, {})).toEqual([...docs].sort((a, b) => (a.id < b.id ? -1 : 1)));
    }
  });

  it('leaves the same data when the same input is loaded twice', async () => {
    const text = [...databaseJsonChunks(generateRecords(options))].join('');
    await loadRecords({ store, input: chunked(text, 4096), format: { kind: 'database' } });
    const before = await store.find('biosample_set', {});
    const again = await loadRecords({ store, input: chunked(text, 4096), format: { kind: 'database' } });
    expect(again.inserted).toBe(0);
    expect(again.updated).toBe(
      3 + 20 + 50 + again.counts.data_generation_set! + again.counts.workflow_execution_set!,
    );
    expect(await store.find('biosample_set', {})).toEqual(before);
    expect(await store.count('data_object_set', {})).toBe(50);
  });

  it('reports top-level values that are not arrays of records in their place, and keeps tricky strings intact', async () => {
    const doc = {
      id: 'nmdc:sty-11-x1',
      name: 'brackets ] } [ { and "quotes" \\ and , commas',
      type: 'nmdc:Study',
      study_category: 'research_study',
    };
    const text = JSON.stringify(
      { '@type': 'Database', meta: { a: [1, { b: '}' }] }, biosample_set: null, study_set: [doc] },
      null,
      2,
    );
    const summary = await loadRecords({
      store,
      input: chunked(text, 3),
      format: { kind: 'database' },
      validate: false,
    });
    // `@type` "Database" and a null collection are part of Database JSON; `meta` is not.
    expect(summary.rejected.map((r) => [r.position, r.reason])).toEqual([
      ['meta', '"meta" holds an object, not an array of records'],
    ]);
    expect(await store.getById('study_set', 'nmdc:sty-11-x1')).toEqual(doc);
  });

  it('without validation, reports bad records with their source and position, skips them and keeps the good ones', async () => {
    const text = JSON.stringify({
      biosample_set: [
        { id: 'nmdc:bsm-11-good1', type: 'nmdc:Biosample' },
        { id: 'nmdc:sty-11-wrong', type: 'nmdc:Study' },
        'not a record',
        { name: 'no id' },
        { id: 'no colon here' },
        { id: 'nmdc:bsm-11-good2', type: 'nmdc:Biosample' },
      ],
      not_a_collection: [{ id: 'nmdc:bsm-11-x' }],
    });
    const rejected: string[] = [];
    const summary = await loadRecords({
      store,
      input: chunked(text),
      format: { kind: 'database' },
      source: 'bad.json',
      validate: false,
      onReject: (r) => rejected.push(`${r.source} ${r.position}`),
    });
    expect(summary.counts).toEqual({ biosample_set: 2 });
    expect(summary.rejected.map((r) => [r.position, r.reason])).toEqual([
      ['biosample_set[1]', 'id "nmdc:sty-11-wrong" has a typecode of study_set, not biosample_set'],
      ['biosample_set[2]', 'record is not a JSON object'],
      ['biosample_set[3]', 'record has no string id'],
      ['biosample_set[4]', 'id "no colon here" does not have the form prefix:local_id'],
      ['not_a_collection[0]', '"not_a_collection" is not a collection of the NMDC schema'],
    ]);
    expect(rejected[0]).toBe('bad.json biosample_set[1]');
    expect((await store.find('biosample_set', {})).map((d: Doc) => d.id)).toEqual([
      'nmdc:bsm-11-good1',
      'nmdc:bsm-11-good2',
    ]);
  });

  it('keeps records of collections without ids under a store key, and still refuses id-less records elsewhere', async () => {
    const member = (n: number) => ({
      was_generated_by: 'nmdc:wfmgan-11-abc.1',
      gene_function_id: `KEGG.ORTHOLOGY:K0${n}`,
      count: n,
      type: 'nmdc:FunctionalAnnotationAggMember',
    });
    const text = JSON.stringify({
      functional_annotation_agg: [member(1), { _id: { $oid: '65a' }, ...member(2) }, member(1)],
      study_set: [{ name: 'no id' }],
    });
    const summary = await loadRecords({
      store,
      input: chunked(text),
      format: { kind: 'database' },
      validate: false,
    });
    expect(summary.rejected).toEqual([
      { source: 'input', position: 'study_set[0]', reason: 'record has no string id' },
    ]);
    const stored = await store.find('functional_annotation_agg', {}, { sort: [['count', 1]] });
    // The same content twice is one record; each is keyed by a digest of its content (without `_id`).
    expect(stored.map(({ id: _key, ...rest }) => rest)).toEqual([member(1), member(2)]);
    expect(stored.every((d) => /^key:[0-9a-f]{32}$/.test(d.id))).toBe(true);
    const again = await loadRecords({
      store,
      input: chunked(text),
      format: { kind: 'database' },
      validate: false,
    });
    expect(again.inserted).toBe(0);
    expect(await store.count('functional_annotation_agg', {})).toBe(2);
  });

  it('without validation, loads JSON lines of the collection named by the file, reporting bad lines by number', async () => {
    expect(formatOfFile('/x/biosample_set.jsonl.gz')).toEqual({ kind: 'jsonl', collection: 'biosample_set' });
    expect(formatOfFile('dump.json.gz')).toEqual({ kind: 'database' });
    const lines = [
      JSON.stringify({ id: 'nmdc:bsm-11-l1', type: 'nmdc:Biosample' }),
      '',
      '{"id": "nmdc:bsm-11-l2", broken',
      JSON.stringify({ id: 'nmdc:bsm-11-l3', _id: { $oid: 'abc' } }),
    ].join('\n');
    const summary = await loadRecords({
      store,
      input: chunked(lines),
      format: formatOfFile('biosample_set.jsonl'),
      validate: false,
    });
    expect(summary.counts).toEqual({ biosample_set: 2 });
    expect(summary.rejected).toHaveLength(1);
    expect(summary.rejected[0]!.position).toBe('biosample_set[1] (line 3)');
    expect(summary.rejected[0]!.reason).toMatch(/^not valid JSON/);
    expect(await store.getById('biosample_set', 'nmdc:bsm-11-l3')).toEqual({ id: 'nmdc:bsm-11-l3' });
  });

  it('fails on input that ends inside a value', async () => {
    await expect(
      loadRecords({
        store,
        input: chunked('{"study_set": [{"id": "nmdc:sty-11-a"'),
        format: { kind: 'database' },
      }),
    ).rejects.toThrow(/truncated/);
  });

  const term = (id: string) => ({
    term: { id, type: 'nmdc:OntologyClass' },
    type: 'nmdc:ControlledIdentifiedTermValue',
  });
  const study = (id: string) => ({ id, type: 'nmdc:Study', study_category: 'research_study' });
  const biosample = (id: string, studyId: string) => ({
    id,
    type: 'nmdc:Biosample',
    name: `sample ${id}`,
    associated_studies: [studyId],
    env_broad_scale: term('ENVO:00000446'),
    env_local_scale: term('ENVO:00000114'),
    env_medium: term('ENVO:00001998'),
  });

  it('validates by default and writes nothing when a record fails, reporting each with its place and id', async () => {
    const { name: _name, ...nameless } = biosample('nmdc:bsm-11-bad00001', 'nmdc:sty-11-good0001');
    const text = JSON.stringify({
      study_set: [study('nmdc:sty-11-good0001')],
      biosample_set: [biosample('nmdc:bsm-11-good0001', 'nmdc:sty-11-good0001'), nameless, 'not a record'],
      not_a_collection: [{ id: 'nmdc:bsm-11-x' }],
    });
    const summary = await loadRecords({
      store,
      input: chunked(text, 64),
      format: { kind: 'database' },
      source: 'bad.json',
    });
    expect(summary.rejected).toEqual([
      {
        source: 'bad.json',
        position: 'biosample_set[1]',
        id: 'nmdc:bsm-11-bad00001',
        reason: "'name' is a required property in /biosample_set/1 (id 'nmdc:bsm-11-bad00001')",
      },
      {
        source: 'bad.json',
        position: 'biosample_set[2]',
        reason: "'not a record' is not of type 'object' in /biosample_set/2",
      },
      {
        source: 'bad.json',
        position: 'not_a_collection[0]',
        id: 'nmdc:bsm-11-x',
        reason: "'not_a_collection' is not a known schema collection name",
      },
    ]);
    expect(summary.counts).toEqual({});
    expect(await store.count('study_set', {})).toBe(0);
    expect(await store.count('biosample_set', {})).toBe(0);
  });

  it('checks references against the input and the store, and writes nothing when one is broken', async () => {
    const input = (docs: object) => chunked(JSON.stringify(docs), 512);
    const broken = await loadRecords({
      store,
      input: input({ biosample_set: [biosample('nmdc:bsm-11-ref00001', 'nmdc:sty-11-nowhere1')] }),
      format: { kind: 'database' },
    });
    expect(broken.rejected).toEqual([
      {
        source: 'input',
        position: 'biosample_set[0]',
        id: 'nmdc:bsm-11-ref00001',
        reason: expect.stringMatching(
          /^Document 'nmdc:bsm-11-ref00001' in collection 'biosample_set' has a field 'associated_studies' that references a document having id 'nmdc:sty-11-nowhere1', .* at \/biosample_set\/0\/associated_studies\/0$/,
        ),
      },
    ]);
    expect(await store.count('biosample_set', {})).toBe(0);

    await store.upsertMany('study_set', [study('nmdc:sty-11-nowhere1')]);
    const fixed = await loadRecords({
      store,
      input: input({ biosample_set: [biosample('nmdc:bsm-11-ref00001', 'nmdc:sty-11-nowhere1')] }),
      format: { kind: 'database' },
    });
    expect(fixed.rejected).toEqual([]);
    expect(fixed.counts).toEqual({ biosample_set: 1 });
  });

  it('checks several inputs together (references may cross them), reading each once and writing nothing', async () => {
    const files = {
      'studies.json': JSON.stringify({ study_set: [study('nmdc:sty-11-cross001')] }),
      'biosample_set.jsonl': [
        JSON.stringify(biosample('nmdc:bsm-11-cross001', 'nmdc:sty-11-cross001')),
        '',
        JSON.stringify(biosample('nmdc:bsm-11-cross002', 'nmdc:sty-11-missing1')),
      ].join('\n'),
    };
    const opened: string[] = [];
    const inputs = Object.entries(files).map(([source, text]) => ({
      source,
      format: formatOfFile(source),
      open: () => (opened.push(source), chunked(text, 100)),
    }));
    const summary = await checkInputs(inputs, { store });
    expect(opened).toEqual(['studies.json', 'biosample_set.jsonl']);
    expect(summary.records).toBe(3);
    expect(summary.rejected).toEqual([
      {
        source: 'biosample_set.jsonl',
        position: 'biosample_set[1]',
        id: 'nmdc:bsm-11-cross002',
        reason: expect.stringContaining("references a document having id 'nmdc:sty-11-missing1'"),
      },
    ]);
    expect(await store.count('study_set', {})).toBe(0);
  });

  it('reports a record of JSON lines by its index in the collection and its line', async () => {
    const { name: _name, ...nameless } = biosample('nmdc:bsm-11-line0001', 'nmdc:sty-11-x');
    const summary = await checkInputs(
      [
        {
          source: 'biosample_set.jsonl',
          format: formatOfFile('biosample_set.jsonl'),
          open: () => chunked(`\n${JSON.stringify(nameless)}\n`),
        },
      ],
      { store },
    );
    expect(summary.rejected.map((r) => [r.position, r.reason])).toEqual([
      [
        'biosample_set[0] (line 2)',
        "'name' is a required property in /biosample_set/0 (id 'nmdc:bsm-11-line0001')",
      ],
    ]);
  });

  describe('input that is not NMDC Database JSON', () => {
    const refusal = (text: string, size = 5) =>
      loadRecords({
        store,
        input: chunked(text, size),
        format: { kind: 'database' },
        source: 'bad.json',
      }).then(
        () => 'loaded',
        (err: Error) => `${err.constructor.name}: ${err.message}`,
      );
    const notDatabase = (line: number, what: string) =>
      `UnreadableInput: bad.json: not NMDC Database JSON (line ${line}): ${what}`;

    it('is refused whole, naming the file and the line, with nothing written', async () => {
      const cases: Array<[string, string]> = [
        ['', notDatabase(1, 'the input is empty')],
        ['  \n ', notDatabase(2, 'the input is empty')],
        [
          'hello world',
          notDatabase(
            1,
            'the input must be one JSON object of collections ({"study_set": [...], ...}); it begins with "h"',
          ),
        ],
        [
          '[{"id": "nmdc:sty-11-a"}]',
          notDatabase(
            1,
            'the input must be one JSON object of collections ({"study_set": [...], ...}); it begins with "["',
          ),
        ],
        [
          'null',
          notDatabase(
            1,
            'the input must be one JSON object of collections ({"study_set": [...], ...}); it begins with "n"',
          ),
        ],
        [
          '{"study_set": []}\n{"study_set": []}',
          notDatabase(2, 'found "{" after the end of the top-level object'),
        ],
        ['{"study_set": []} trailing', notDatabase(1, 'found "t" after the end of the top-level object')],
        ['{"study_set": [], }', notDatabase(1, 'expected a collection name in quotes, found "}"')],
        ['{study_set: []}', notDatabase(1, 'expected a collection name in quotes, found "s"')],
        ['{"study_set" []}', notDatabase(1, 'expected \':\' after "study_set", found "["')],
        [
          '{"study_set": [] "x": []}',
          notDatabase(1, 'expected \',\' or \'}\' after the value of "study_set", found "\\""'),
        ],
        [
          '{\n  "study_set": [\n    {"id": "a"}\n    {"id": "b"}\n  ]\n}',
          notDatabase(4, "expected ',' or ']' after study_set[0], found \"{\""),
        ],
        ['{"study_set": [,]}', notDatabase(1, 'expected the record study_set[0], found ","')],
        // Lines are counted inside records too (outside their strings).
        [
          '{"study_set": [{\n"id": "a",\n"b": [\n1]\n},]}',
          notDatabase(5, 'expected the record study_set[1], found "]"'),
        ],
        ['{"study_set": [{"id": "a"},]}', notDatabase(1, 'expected the record study_set[1], found "]"')],
        [
          '{"study_set": [{"id": "a"}',
          notDatabase(1, 'the input ended inside the top-level object (truncated file?)'),
        ],
        [
          '{"study_set": [{"id": "a"}]',
          notDatabase(1, 'the input ended inside the top-level object (truncated file?)'),
        ],
        [
          '{"study_set": [{"id": "a',
          notDatabase(1, 'the input ended inside the top-level object (truncated file?)'),
        ],
        ['{"x": tru}', notDatabase(1, 'the value of "x" is not JSON')],
      ];
      for (const [text, expected] of cases) {
        // Whole, and cut into pieces of 1, 2, 3 and 7 code units.
        for (const size of [text.length + 1, 1, 2, 3, 7])
          expect([text, size, await refusal(text, size)]).toEqual([text, size, expected]);
      }
      expect(await store.find('study_set', {})).toEqual([]);
    });

    it('names a broken gzip stream as such', async () => {
      const zipped = zlib.gzipSync(JSON.stringify({ study_set: [{ id: 'nmdc:sty-11-a' }] }));
      const input = Readable.from([zipped.subarray(0, zipped.length - 10)]).pipe(zlib.createGunzip());
      await expect(
        loadRecords({ store, input, format: { kind: 'database' }, source: 'dump.json.gz' }),
      ).rejects.toThrow(
        /^dump\.json\.gz: not a complete gzip file \(unexpected end of file; truncated or not gzip\?\)$/,
      );
    });

    it('reports each top-level value that is not an array of records, and writes nothing', async () => {
      const text = JSON.stringify({
        '@type': 'Database',
        study_set: null,
        x: 5,
        biosample_set: { id: 'nmdc:bsm-11-a' },
        '@context': 'nmdc',
        flag: true,
        big: 'y'.repeat(70_000),
      });
      const summary = await loadRecords({ store, input: chunked(text, 4096), format: { kind: 'database' } });
      expect(summary.rejected.map((r) => [r.position, r.reason])).toEqual([
        ['x', '"x" holds a number, not an array of records'],
        ['biosample_set', '"biosample_set" holds an object, not an array of records'],
        ['@context', '"@context" holds a string, not an array of records'],
        ['flag', '"flag" holds true, not an array of records'],
        ['big', '"big" holds a value of more than 64 KiB, not an array of records'],
      ]);
      expect(summary.inserted).toBe(0);
    });
  });

  it('reports a record longer than MAX_RECORD_CHARS in its place without holding it, in time linear in its length', async () => {
    const long = 'z'.repeat(MAX_RECORD_CHARS);
    const good = (n: number) => ({
      id: `nmdc:sty-11-ok${n}`,
      type: 'nmdc:Study',
      study_category: 'research_study',
    });
    // Database JSON and JSON lines, each fed in 64 KiB pieces (over 1,000 of them for the long record).
    const database = `{"study_set": [${JSON.stringify(good(1))}, {"id": "nmdc:sty-11-long", "name": "${long}"}, ${JSON.stringify(good(2))}]}`;
    const summary = await loadRecords({
      store,
      input: chunked(database, 65_536),
      format: { kind: 'database' },
      validate: false,
    });
    expect(summary.rejected.map((r) => [r.position, r.reason])).toEqual([
      ['study_set[1]', 'record is more than 64 MiB of JSON'],
    ]);
    expect(summary.counts).toEqual({ study_set: 2 });
    const lines = [
      JSON.stringify(good(3)),
      `{"id": "nmdc:sty-11-long2", "name": "${long}"}`,
      JSON.stringify(good(4)),
    ].join('\r\n');
    const fromLines = await loadRecords({
      store,
      input: chunked(lines, 65_536),
      format: formatOfFile('study_set.jsonl'),
      validate: false,
    });
    expect(fromLines.rejected.map((r) => [r.position, r.reason])).toEqual([
      ['study_set[1] (line 2)', 'line is more than 64 MiB of JSON'],
    ]);
    expect((await store.find('study_set', {})).map((d: Doc) => d.id)).toEqual([
      'nmdc:sty-11-ok1',
      'nmdc:sty-11-ok2',
      'nmdc:sty-11-ok3',
      'nmdc:sty-11-ok4',
    ]);
  });

  it('accepts ids of unknown typecodes and other prefixes', () => {
    expect(recordProblem('study_set', { id: 'gold:Gs0110115' })).toBeUndefined();
    expect(recordProblem('functional_annotation_agg', { id: 'nmdc:xyz-11-1' })).toBeUndefined();
  });
});
