/**
 * Bulk export (`GET /export/{collection_name}`) and the ceiling of `max_page_size` that points to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { parse as parseCsv } from 'csv-parse/sync';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import { Exporter, EXPORT_BATCH, flattenRecord, type ExportRequest } from '../../src/metadata/export.ts';
import type { CollectionsReader } from '../../src/metadata/collections-reader.ts';
import { MAX_PAGE_SIZE, largerPageInstead } from '../../src/metadata/paging-state.ts';
import { tokenPage, type IdOrderedSource } from '../../src/metadata/token-pages.ts';
import { createNmdcClient } from '../../generated/sdk-2.13.0/index.ts';

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-x${String(n).padStart(4, '0')}`,
  type: 'nmdc:Biosample',
  name: n === 1 ? 'Soil, "wet" core\nsecond line' : `Sample ${n}`,
  ecosystem_category: n % 2 ? 'Plants' : 'Aquatic',
  lat_lon: { latitude: 40 + (n % 10), longitude: -120.5, type: 'nmdc:GeolocationValue' },
  associated_studies: n === 2 ? ['nmdc:sty-11-a', 'nmdc:sty-11-b|c'] : ['nmdc:sty-11-a'],
  ...(n === 3 ? { description: 'tab\there, back\\slash' } : {}),
});
const BIOSAMPLES = Array.from({ length: 2_500 }, (_, i) => biosample(i));
const plants = BIOSAMPLES.filter((b) => b.ecosystem_category === 'Plants');

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await t.store.upsertMany('biosample_set', BIOSAMPLES);
  await t.store.upsertMany('study_set', [
    {
      id: 'nmdc:sty-11-a',
      type: 'nmdc:Study',
      name: 'A study',
      has_credit_associations: [
        { applies_to_person: { name: 'Ada', type: 'nmdc:PersonValue' }, applied_roles: ['Investigation'] },
        { applies_to_person: { name: 'Grace', type: 'nmdc:PersonValue' }, applied_roles: ['Methodology'] },
      ],
    },
  ]);
});
afterAll(async () => t?.close());

/** The whole body as text, however it is typed. */
const text = (req: request.Test) =>
  req.buffer(true).parse((res, callback) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (body += chunk));
    res.on('end', () => callback(null, body));
  });

const lines = (body: string) =>
  body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Doc);

describe('GET /export/{collection_name}', () => {
  it('streams a whole collection as NDJSON by default, in id order', async () => {
    const res = await text(request(t.app).get('/export/biosample_set')).expect(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="biosample_set.ndjson"');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(lines(res.body as string)).toEqual(BIOSAMPLES);
  });

  it('streams the records a filter the index decides matches as their stored texts, unparsed', async () => {
    const store = t.store as unknown as { counters: { bodiesParsed: number } };
    const before = store.counters.bodiesParsed;
    const res = await text(
      request(t.app).get('/export/biosample_set').query({ filter: '{"ecosystem_category": "Plants"}' }),
    ).expect(200);
    expect(store.counters.bodiesParsed).toBe(before);
    expect(lines(res.body as string)).toEqual(plants);
    const stored = await Promise.all(
      plants.map(async (b) => (await t.store.getTextById!('biosample_set', b.id))!),
    );
    expect(res.body).toBe(`${stored.join('\n')}\n`);
  });

  it('streams the records a JSON filter matches, projected', async () => {
    const res = await text(
      request(t.app)
        .get('/export/biosample_set')
        .query({ filter: '{"ecosystem_category": "Plants"}', projection: 'name' }),
    ).expect(200);
    expect(lines(res.body as string)).toEqual(plants.map((b) => ({ id: b.id, name: b.name })));
  });

  it('answers a JSON array for Accept: application/json, and for format=json over Accept', async () => {
    const byAccept = await text(
      request(t.app).get('/export/study_set').set('Accept', 'application/json'),
    ).expect(200);
    expect(byAccept.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(byAccept.body as string)).toEqual([
      await t.store.getById('study_set', 'nmdc:sty-11-a'),
    ]);
    const byFormat = await text(
      request(t.app).get('/export/biosample_set?format=json').set('Accept', 'text/csv'),
    ).expect(200);
    expect(JSON.parse(byFormat.body as string)).toEqual(BIOSAMPLES);
    const empty = await text(request(t.app).get('/export/biosample_set?format=json&filter={"name":"none"}'));
    expect(JSON.parse(empty.body as string)).toEqual([]);
  });

  it('writes CSV with flattened dotted columns, RFC 4180 quoting and joined lists', async () => {
    const res = await text(
      request(t.app)
        .get('/export/biosample_set')
        .query({ format: 'csv', filter: '{"id": {"$lte": "nmdc:bsm-11-x0003"}}' }),
    ).expect(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition']).toBe('attachment; filename="biosample_set.csv"');
    const body = res.body as string;
    expect(body.split('\r\n')[0]).toBe(
      'id,type,name,ecosystem_category,lat_lon.latitude,lat_lon.longitude,lat_lon.type,associated_studies,description',
    );
    const rows = parseCsv(body, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toHaveLength(4);
    expect(rows[1]).toEqual({
      id: 'nmdc:bsm-11-x0001',
      type: 'nmdc:Biosample',
      name: 'Soil, "wet" core\nsecond line',
      ecosystem_category: 'Plants',
      'lat_lon.latitude': '41',
      'lat_lon.longitude': '-120.5',
      'lat_lon.type': 'nmdc:GeolocationValue',
      associated_studies: 'nmdc:sty-11-a',
      description: '',
    });
    expect(rows[2]!.associated_studies).toBe('nmdc:sty-11-a|nmdc:sty-11-b\\|c');
    expect(rows[3]!.description).toBe('tab\there, back\\slash');
  });

  it('writes TSV with tabs, line breaks and backslashes escaped', async () => {
    const res = await text(
      request(t.app).get('/export/biosample_set').set('Accept', 'text/tab-separated-values').query({
        filter: '{"id": {"$in": ["nmdc:bsm-11-x0001", "nmdc:bsm-11-x0003"]}}',
        projection: 'name,description',
      }),
    ).expect(200);
    expect(res.headers['content-type']).toBe('text/tab-separated-values; charset=utf-8');
    expect(res.body).toBe(
      'id\tname\tdescription\n' +
        'nmdc:bsm-11-x0001\tSoil, "wet" core\\nsecond line\t\n' +
        'nmdc:bsm-11-x0003\tSample 3\ttab\\there, back\\\\slash\n',
    );
  });

  it('gives lists of objects a column per position', async () => {
    const res = await text(request(t.app).get('/export/study_set?format=csv')).expect(200);
    const [header, row] = (res.body as string).split('\r\n');
    expect(header).toBe(
      'id,type,name,has_credit_associations.0.applies_to_person.name,has_credit_associations.0.applies_to_person.type,' +
        'has_credit_associations.0.applied_roles,has_credit_associations.1.applies_to_person.name,' +
        'has_credit_associations.1.applies_to_person.type,has_credit_associations.1.applied_roles',
    );
    expect(row).toBe(
      'nmdc:sty-11-a,nmdc:Study,A study,Ada,nmdc:PersonValue,Investigation,Grace,nmdc:PersonValue,Methodology',
    );
  });

  it('refuses before streaming: unknown collection, bad filter, bad format, Accept it cannot answer', async () => {
    const unknown = await request(t.app).get('/export/sample_set').expect(400);
    expect(unknown.body.detail).toContain('Unknown collection "sample_set"');
    const filter = await request(t.app).get('/export/biosample_set?filter={oops').expect(422);
    expect(filter.body.detail).toContain('Filter is not valid JSON');
    const format = await request(t.app).get('/export/biosample_set?format=xml').expect(422);
    expect(format.body).toEqual({
      detail: 'query.format must be equal to one of the allowed values: ndjson, json, csv, tsv',
    });
    const accept = await request(t.app).get('/export/biosample_set').set('Accept', 'image/png').expect(406);
    expect(accept.body.detail).toContain(
      'None of the media types in Accept can be answered; use application/x-ndjson',
    );
  });

  it('stops reading the store when the client goes away', async () => {
    const store = t.store as unknown as { counters: { bodiesParsed: number } };
    const controller = new AbortController();
    const before = store.counters.bodiesParsed;
    // A filter each record is parsed for (records the index or their strings decide are read as
    // their texts: the `$ne` beside the `$regex` leaves each record to the filter).
    const res = await fetch(
      `${t.url}/export/biosample_set?filter=${encodeURIComponent('{"name": {"$regex": "^Sample [0-9]+$", "$ne": "x"}}')}`,
      { signal: controller.signal },
    );
    const reader = res.body!.getReader();
    await reader.read();
    expect(store.counters.bodiesParsed).toBeGreaterThan(before);
    controller.abort();
    await new Promise((r) => setTimeout(r, 300));
    const after = store.counters.bodiesParsed;
    await new Promise((r) => setTimeout(r, 300));
    expect(store.counters.bodiesParsed).toBe(after);
    // The service goes on answering.
    await request(t.app).get('/export/study_set').expect(200);
  });

  it('the SDK streams it as records', async () => {
    const nmdc = createNmdcClient({ baseUrl: t.url });
    const seen: string[] = [];
    for await (const record of nmdc.exportRecords('biosample_set', {
      filter: { ecosystem_category: 'Plants' },
    }))
      seen.push(record.id!);
    expect(seen).toEqual(plants.map((b) => b.id));
    await expect(async () => {
      for await (const _ of nmdc.exportRecords('no_such_set')) void _;
    }).rejects.toThrow(/status 400.*Unknown collection/);
  });
});

describe('Exporter', () => {
  /** A reader of `n` records that counts the batches asked for. */
  function countingReader(n: number) {
    const all = Array.from({ length: n }, (_, i) => ({ id: `r${String(i).padStart(6, '0')}`, v: i }));
    const reader = {
      batches: 0,
      async find(_c: string[], _f: unknown, page: { afterId?: string; limit?: number }) {
        reader.batches++;
        const from = page.afterId === undefined ? 0 : all.findIndex((d) => d.id > page.afterId!);
        return from < 0 ? [] : all.slice(from, from + (page.limit ?? n));
      },
      // Records read whole are read as ever here: parsed.
      findWhole(c: string[], f: unknown, page: { afterId?: string; limit?: number }) {
        return reader.find(c, f, page);
      },
    };
    return reader;
  }
  const request = (format: ExportRequest['format']): ExportRequest => ({
    collection: 'biosample_set',
    filter: { v: { $gte: 0 } },
    format,
  });

  it('reads the next batch only once the sink took the last one (backpressure)', async () => {
    const reader = countingReader(EXPORT_BATCH * 10);
    const exporter = new Exporter(reader as unknown as CollectionsReader, {} as never);
    let release!: () => void;
    let chunks = 0;
    const done = exporter.write(request('ndjson'), () => {
      chunks++;
      return new Promise<void>((resolve) => (release = resolve));
    });
    await new Promise((r) => setTimeout(r, 50));
    expect([chunks, reader.batches]).toEqual([1, 1]);
    for (let i = 0; i < 3; i++) {
      release();
      await new Promise((r) => setTimeout(r, 20));
    }
    expect([chunks, reader.batches]).toEqual([4, 4]);
    const finish = setInterval(() => release(), 1);
    expect(await done).toBe(EXPORT_BATCH * 10);
    clearInterval(finish);
  });

  it('takes turns between batches of a table export, which reads the records twice', async () => {
    // A reader answering at once, as the embedded store does, each batch costing 4 ms.
    const reader = countingReader(EXPORT_BATCH * 30);
    const find = reader.find.bind(reader);
    reader.find = async (...args: Parameters<typeof find>) => {
      const until = performance.now() + 4;
      while (performance.now() < until);
      return find(...args);
    };
    const exporter = new Exporter(reader as unknown as CollectionsReader, {} as never);
    let longest = 0;
    let last = performance.now();
    let counting = true;
    const tick = () => {
      longest = Math.max(longest, performance.now() - last);
      last = performance.now();
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const written: string[] = [];
    const count = await exporter.write(request('csv'), async (text) => void written.push(text));
    // One more turn, so the stretch since the last one is counted too.
    await new Promise((resolve) => setImmediate(resolve));
    counting = false;
    expect(count).toBe(EXPORT_BATCH * 30);
    expect(written[0]).toBe('id,v\r\n');
    expect(written.join('').split('\r\n')).toHaveLength(EXPORT_BATCH * 30 + 2);
    // 60 batches of 4 ms: without turns between them, one stretch of 240 ms.
    expect(longest).toBeLessThan(100);
  });

  it('flattens values for tables', () => {
    expect(
      flattenRecord({
        id: 'x',
        a: { b: 1, c: [true, null, 'p|q'] },
        l: [{ n: 'one' }, { n: 'two', m: [] }],
        e: {},
        z: null,
      }),
    ).toEqual([
      ['id', 'x'],
      ['a.b', '1'],
      ['a.c', 'true||p\\|q'],
      ['l.0.n', 'one'],
      ['l.1.n', 'two'],
      ['l.1.m', ''],
      ['e', ''],
      ['z', ''],
    ]);
  });
});

describe('the ceiling of max_page_size', () => {
  it('is documented and refused above, pointing to the export', async () => {
    expect(MAX_PAGE_SIZE).toBe(100_000);
    const res = await request(t.app).get('/nmdcschema/biosample_set?max_page_size=100001').expect(422);
    expect(res.body).toEqual({
      detail:
        'max_page_size must be at most 100000 (got 100001); page through them with max_page_size up to 100000 and ' +
        'next_page_token, or stream them all with GET /export/biosample_set (NDJSON, JSON, CSV or TSV)',
    });
    const linked = await request(t.app)
      .get('/nmdcschema/linked_instances?ids=nmdc:bsm-11-x0001&max_page_size=100000000')
      .expect(422);
    expect(linked.body.detail).toMatch(
      /^max_page_size must be at most 100000 \(got 100000000\); page through them/,
    );
  });

  it('still pages up to the ceiling, as public clients ask (max_page_size=100000)', async () => {
    const res = await request(t.app).get('/nmdcschema/biosample_set?max_page_size=100000').expect(200);
    expect(res.body.resources).toHaveLength(BIOSAMPLES.length);
    const all = await request(t.app).get('/nmdcschema/biosample_set?max_page_size=-1').expect(200);
    expect(all.body.resources).toHaveLength(BIOSAMPLES.length);
  });

  it('refuses an every-record page (max_page_size below 1) when more records match than a page holds', async () => {
    const asked: Array<number | undefined> = [];
    const read: IdOrderedSource = async (_filter, page) => {
      asked.push(page.limit);
      return Array.from({ length: Math.min(page.limit ?? Infinity, MAX_PAGE_SIZE + 5) }, (_, i) => ({
        id: `r${i}`,
      }));
    };
    const params = { filter: () => ({}), max_page_size: 0 };
    const refused = await tokenPage(
      t.store.state,
      'biosample_set',
      params,
      read,
      largerPageInstead('biosample_set'),
    ).catch((err: unknown) => err as { status: number; detail: string });
    expect(asked).toEqual([MAX_PAGE_SIZE + 1]);
    expect(refused).toMatchObject({
      kind: 'unprocessable',
      detail:
        'More than 100000 records match, more than one page holds (max_page_size below 1 asks for all of them); ' +
        'page through them with max_page_size up to 100000 and next_page_token, or stream them all with ' +
        'GET /export/biosample_set (NDJSON, JSON, CSV or TSV)',
    });
    // Exactly a page's worth is still one page.
    const exactly: IdOrderedSource = async () =>
      Array.from({ length: MAX_PAGE_SIZE }, (_, i) => ({ id: `r${i}` }));
    expect((await tokenPage(t.store.state, 'x', params, exactly)).resources).toHaveLength(MAX_PAGE_SIZE);
  });
});
