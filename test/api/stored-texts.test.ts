/**
 * Pages of records answered whole (the `/nmdcschema/{collection}` listing, the compact finds and
 * `/queries:run` finds) are written from the records' stored texts, unparsed, when answers are
 * not checked against the contract (production). They must be the answers the checked service
 * gives, byte for byte, with the store keys of records without ids still left out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { keyedRecord } from '../../src/store/record-keys.ts';

const ADMIN = { ADMIN_USERNAME: 'root-admin', ADMIN_PASSWORD: 'correct horse battery staple' };
const biosamples: Doc[] = Array.from({ length: 12 }, (_, i) => ({
  id: `nmdc:bsm-11-t${String(i).padStart(3, '0')}`,
  type: 'nmdc:Biosample',
  name: `Soil "core" ${i} \u00e9 \u2028 \ud83c\udf0d`,
  ecosystem_category: i % 3 ? 'Terrestrial' : 'Aquatic',
  associated_studies: ['nmdc:sty-11-t000'],
  depth: { has_numeric_value: i * 1.5, has_unit: 'm' },
}));
const annotations = [
  { was_generated_by: 'nmdc:wfmgan-11-a.1', gene_function_id: 'KEGG.ORTHOLOGY:K00001', count: 3 },
  { was_generated_by: 'nmdc:wfmgan-11-a.1', gene_function_id: 'KEGG.ORTHOLOGY:K00002', count: 5 },
];

interface Side {
  app: TestApp;
  token: string;
}
let checked: Side;
let plain: Side;

async function side(env: Record<string, string>): Promise<Side> {
  const app = await createTestApp({ ...ADMIN, ...env });
  await app.store.upsertMany('biosample_set', biosamples);
  await app.searchIndex.index('biosample_set', biosamples);
  // Kept under store keys, as the service keeps records without ids (keyedRecord).
  await app.store.upsertMany(
    'functional_annotation_agg',
    annotations.map((a) => keyedRecord('functional_annotation_agg', a) as Doc),
  );
  const res = await request(app.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_PASSWORD })
    .expect(200);
  return { app, token: res.body.access_token as string };
}

beforeAll(async () => {
  checked = await side({});
  plain = await side({ VALIDATE_RESPONSES: 'false' });
});
afterAll(async () => {
  await checked?.app.close();
  await plain?.app.close();
});

/** What may differ between two services answering the same request: tokens, cursors, timings. */
function steady(text: string): string {
  return text
    .replace(/"(next_page_token|next_cursor)":"[^"]*"/g, '"$1":"…"')
    .replace(/"id":"[A-Za-z0-9_-]{20,}"/g, '"id":"…"')
    .replace(/"db_response_time_ms":\d+/g, '"db_response_time_ms":0');
}

const parsed = (s: Side) => (s.app.store as SqliteDocumentStore).counters;

async function both(send: (s: Side) => request.Test): Promise<{
  text: string;
  parsedBodies: number;
  body: Record<string, unknown>;
  theirBody: Record<string, unknown>;
}> {
  const theirs = await send(checked).expect(200);
  const before = parsed(plain).bodiesParsed;
  const ours = await send(plain).expect(200);
  expect(ours.headers['content-length']).toBe(String(Buffer.byteLength(ours.text)));
  expect(steady(ours.text)).toBe(steady(theirs.text));
  return {
    text: ours.text,
    parsedBodies: parsed(plain).bodiesParsed - before,
    body: ours.body,
    theirBody: theirs.body,
  };
}

const get = (path: string) => (s: Side) => request(s.app.app).get(path);
const run = (body: object) => (s: Side) =>
  request(s.app.app).post('/queries:run').set('Authorization', `Bearer ${s.token}`).send(body);

/** The stored text of each record must be in the answer as it is. */
async function holdsStoredTexts(text: string, ids: string[]): Promise<void> {
  for (const id of ids) expect(text).toContain((await plain.app.store.getTextById!('biosample_set', id))!);
}

describe('records answered as their stored texts', () => {
  it('lists a collection page by page as the checked service does, reading no record', async () => {
    const first = await both(get('/nmdcschema/biosample_set?filter=%7B%7D&max_page_size=5'));
    expect(first.parsedBodies).toBe(0);
    const ids = (first.body.resources as Doc[]).map((d) => d.id);
    expect(ids).toEqual(biosamples.slice(0, 5).map((d) => d.id));
    await holdsStoredTexts(first.text, ids);
    // The next page, from each service's own token.
    const token = (s: Side) =>
      request(s.app.app)
        .get('/nmdcschema/biosample_set?max_page_size=5')
        .then((r) => r.body.next_page_token as string);
    const [theirs, ours] = [await token(checked), await token(plain)];
    const second = await both((s) =>
      request(s.app.app).get(
        `/nmdcschema/biosample_set?max_page_size=5&page_token=${s === plain ? ours : theirs}`,
      ),
    );
    expect((second.body.resources as Doc[]).map((d) => d.id)).toEqual(
      biosamples.slice(5, 10).map((d) => d.id),
    );
  });

  it('lists filtered pages, and leaves out the store keys of records without ids', async () => {
    const filtered = await both(
      get(`/nmdcschema/biosample_set?filter=${encodeURIComponent('{"ecosystem_category":"Aquatic"}')}`),
    );
    expect((filtered.body.resources as Doc[]).map((d) => d.ecosystem_category)).toEqual(
      Array(4).fill('Aquatic'),
    );
    const keyed = await both(get('/nmdcschema/functional_annotation_agg?max_page_size=10'));
    expect((keyed.body.resources as Doc[]).map((r) => r.id)).toEqual([undefined, undefined]);
    expect(keyed.body.resources).toEqual(expect.arrayContaining(annotations));
    // A projection, which is not the stored text, is answered as ever.
    const projected = await both(get('/nmdcschema/biosample_set?max_page_size=3&projection=name'));
    expect(projected.body.resources).toEqual(biosamples.slice(0, 3).map(({ id, name }) => ({ id, name })));
  });

  it('answers the compact finds, by page, by cursor and sorted', async () => {
    const page = await both(get('/biosamples?per_page=4&page=2'));
    expect(page.parsedBodies).toBe(0);
    expect((page.body.results as Doc[]).map((d) => d.id)).toEqual(biosamples.slice(4, 8).map((d) => d.id));
    await holdsStoredTexts(
      page.text,
      biosamples.slice(4, 8).map((d) => d.id),
    );
    const cursor = await both(get('/biosamples?per_page=3&cursor=*&filter=ecosystem_category:Terrestrial'));
    expect((cursor.body.results as Doc[]).length).toBe(3);
    // A sorted page read off the sort path's index: its records' bodies are read, not parsed.
    const sorted = await both(get('/biosamples?per_page=3&sort=depth.has_numeric_value:desc'));
    expect(sorted.parsedBodies).toBe(0);
    expect((sorted.body.results as Doc[]).map((d) => d.id)).toEqual(
      biosamples
        .slice(-3)
        .reverse()
        .map((d) => d.id),
    );
  });

  it('answers a /queries:run find and its getMore', async () => {
    const first = await both(run({ find: 'biosample_set', batchSize: 5 }));
    // The caller's account is read to authorize the request; no record of the batch is.
    expect(first.parsedBodies).toBeLessThanOrEqual(1);
    const batch = (first.body.cursor as { firstBatch: Doc[] }).firstBatch;
    expect(batch.map((d) => d.id)).toEqual(biosamples.slice(0, 5).map((d) => d.id));
    await holdsStoredTexts(
      first.text,
      batch.map((d) => d.id),
    );
    const cursorOf = async (s: Side) =>
      ((await run({ find: 'biosample_set', batchSize: 5 })(s)).body.cursor as { id: string }).id;
    const [theirs, ours] = [await cursorOf(checked), await cursorOf(plain)];
    const more = await both((s) =>
      run({ getMore: s === plain ? ours : theirs, collection: 'biosample_set', batchSize: 4 })(s),
    );
    expect((more.body.cursor as { nextBatch: Doc[] }).nextBatch.map((d) => d.id)).toEqual(
      biosamples.slice(5, 9).map((d) => d.id),
    );
    // Fields left out by the projection are dropped from parsed records.
    const excluded = await both(run({ find: 'biosample_set', projection: { name: 0 }, batchSize: 2 }));
    expect((excluded.body.cursor as { firstBatch: Doc[] }).firstBatch.map((d) => d.name)).toEqual([
      undefined,
      undefined,
    ]);
    // A sorted batch comes as texts too: the store parses none of its records (the last one is
    // parsed by the reader for the keys the next batch starts after).
    // (The names hold characters SQLite and JavaScript order differently: a walk of their index
    // parses them all. Depths are plain numbers.)
    const deepest = { 'depth.has_numeric_value': -1 };
    const sorted = await both(run({ find: 'biosample_set', sort: deepest, batchSize: 2 }));
    expect(sorted.parsedBodies).toBe(first.parsedBodies);
    const byDepth = [...biosamples].reverse();
    expect((sorted.body.cursor as { firstBatch: Doc[] }).firstBatch.map((d) => d.id)).toEqual(
      byDepth.slice(0, 2).map((d) => d.id),
    );
    const sortedCursorOf = async (s: Side) =>
      (
        (await run({ find: 'biosample_set', sort: deepest, batchSize: 2 })(s)).body.cursor as {
          id: string;
        }
      ).id;
    const [theirsSorted, oursSorted] = [await sortedCursorOf(checked), await sortedCursorOf(plain)];
    const next = await both((s) =>
      run({ getMore: s === plain ? oursSorted : theirsSorted, collection: 'biosample_set', batchSize: 3 })(s),
    );
    expect((next.body.cursor as { nextBatch: Doc[] }).nextBatch.map((d) => d.id)).toEqual(
      byDepth.slice(2, 5).map((d) => d.id),
    );
    expect(next.parsedBodies).toBeLessThanOrEqual(first.parsedBodies);
  });

  it('pages a compact find by cursor in sort order from the stored texts, each page after the last', async () => {
    const seen: string[] = [];
    // Each service's own cursor for the next page.
    const cursors = new Map<Side, string>([
      [checked, '*'],
      [plain, '*'],
    ]);
    for (let page = 0; page < 3; page++) {
      const found = await both((s) =>
        get(
          `/biosamples?per_page=3&sort=depth.has_numeric_value&cursor=${encodeURIComponent(cursors.get(s)!)}`,
        )(s),
      );
      // Read off the index: no record parsed by the store (the reader parses the last for its keys).
      expect(found.parsedBodies).toBe(0);
      const ids = (found.body.results as Doc[]).map((d) => String(d.id));
      seen.push(...ids);
      await holdsStoredTexts(found.text, ids);
      const next = (body: Record<string, unknown>) => (body.meta as { next_cursor: string }).next_cursor;
      cursors.set(checked, next(found.theirBody));
      cursors.set(plain, next(found.body));
    }
    expect(seen).toEqual(biosamples.slice(0, 9).map((d) => d.id));
  });
});
