/**
 * Every public input, fuzzed through the whole app (response validation on) over a few hundred
 * generated records. Property: a 2xx (the contract held, or the validator would have made it a
 * 500) or a 4xx with a `detail`; never a 5xx, never a request past its deadline, and
 * `Object.prototype` untouched at the end.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { createTestApp, type TestApp } from '../support/server.ts';
import { generateRecords } from '../../src/data/generator.ts';
import type { Doc } from '../../src/store/port.ts';
import { loginLimits } from '../../src/auth/login-rate-limit.ts';
import {
  SEED,
  commandBody,
  compactFilter,
  fieldsText,
  jsonFilterText,
  oddId,
  oddText,
  projectionText,
  runs,
  sortText,
  tokenForm,
  tokenLike,
} from './inputs.ts';

const REQUEST_DEADLINE_MS = 5000;
const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype).sort();

let t: TestApp;
let adminToken: string;
const realTokens: string[] = [];
const realCursorIds: string[] = [];
const seen = new Map<number, number>();

/** The property every response must have; returns the status for the tallies. */
function holds(res: request.Response, what: string): void {
  seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
  // Node's HTTP parser refuses an over-long request line before the app sees it.
  if (res.status === 431) return;
  if (res.status >= 500 || res.status < 200 || (res.status >= 300 && res.status < 400)) {
    throw new Error(`${what} -> ${res.status} ${res.text.slice(0, 500)}`);
  }
  if (res.status >= 400 && (typeof res.body !== 'object' || res.body === null || !('detail' in res.body))) {
    throw new Error(`${what} -> ${res.status} without a detail: ${res.text.slice(0, 300)}`);
  }
}

const get = (path: string, query: Record<string, string | number> = {}) =>
  request(t.app).get(path).query(query).timeout(REQUEST_DEADLINE_MS);

/**
 * A request target longer than `http.maxHeaderSize` is refused by Node's HTTP parser: it writes a
 * 431 and closes the connection with the rest of the request unread, so the kernel answers with a
 * reset. On Node 24 the client reads that reset right after the 431 head and reports ECONNRESET
 * instead of the 431 (on Node 20 the 431 arrives whole). Only such over-long requests count as
 * refused; a reset on any other request is still a failure.
 */
function refusedByParser(test: request.Test, err: unknown): boolean {
  const target = (test as unknown as { req?: http.ClientRequest }).req?.path ?? '';
  return (err as NodeJS.ErrnoException | null)?.code === 'ECONNRESET' && target.length > http.maxHeaderSize;
}

/** GETs `path` and checks `holds` on the answer; Node's refusal of an over-long target counts as its 431. */
async function getHolds(path: string, query: Record<string, string | number>, what: string): Promise<void> {
  const test = get(path, query);
  let res: request.Response;
  try {
    res = await test;
  } catch (err) {
    if (!refusedByParser(test, err)) throw err;
    seen.set(431, (seen.get(431) ?? 0) + 1);
    return;
  }
  holds(res, what);
}

beforeAll(async () => {
  t = await createTestApp({ ADMIN_USERNAME: 'fuzz-admin', ADMIN_PASSWORD: 'fuzzing is a kind of testing' });
  const byCollection = new Map<string, Doc[]>();
  for (const { collection, doc } of generateRecords({
    studies: 5,
    biosamples: 300,
    dataObjects: 200,
    seed: 3,
  })) {
    byCollection.set(collection, [...(byCollection.get(collection) ?? []), doc]);
  }
  for (const [collection, docs] of byCollection) {
    await t.store.upsertMany(collection, docs);
    await t.searchIndex.index(collection, docs);
  }
  const login = await request(t.app)
    .post('/token')
    .type('form')
    .send({ grant_type: 'password', username: 'fuzz-admin', password: 'fuzzing is a kind of testing' })
    .expect(200);
  adminToken = login.body.access_token;

  // Real continuation tokens, to be replayed on other endpoints and collections.
  const cursorPage = await get('/biosamples', { cursor: '*', per_page: 5 }).expect(200);
  realTokens.push(cursorPage.body.meta.next_cursor);
  const studyCursor = await get('/studies', { cursor: '*', per_page: 2 }).expect(200);
  realTokens.push(studyCursor.body.meta.next_cursor);
  const tokenPage = await get('/nmdcschema/biosample_set', { max_page_size: 5 }).expect(200);
  realTokens.push(tokenPage.body.next_page_token);
  const run = await request(t.app)
    .post('/queries:run')
    .set('Authorization', `Bearer ${adminToken}`)
    .send({ find: 'data_object_set', batchSize: 3 })
    .expect(200);
  realCursorIds.push(run.body.cursor.id);
  realTokens.push(run.body.cursor.id);
  expect(realTokens.every((x) => typeof x === 'string' && x.length > 0)).toBe(true);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

const params = { seed: SEED, endOnFailure: true } as const;

describe('fuzzed public inputs', () => {
  it('compact finds answer 2xx or 4xx with a detail for any filter, sort, fields, page and cursor', async () => {
    const path = fc.constantFrom(
      '/studies',
      '/biosamples',
      '/data_objects',
      '/planned_processes',
      '/activities',
    );
    const query = fc.record(
      {
        filter: compactFilter,
        sort: sortText,
        fields: fieldsText,
        page: fc.oneof(fc.integer({ min: -3, max: 1000 }), oddText),
        per_page: fc.oneof(fc.integer({ min: -3, max: 2500 }), oddText),
        cursor: tokenLike(realTokens.length ? realTokens : ['*']),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(path, query, async (p, q) => {
        await getHolds(p, q as Record<string, string>, `GET ${p} ${JSON.stringify(q)}`);
      }),
      { ...params, numRuns: runs(250) },
    );
  });

  it('schema finds answer 2xx or 4xx for any JSON filter, projection, page size and page token', async () => {
    const collection = fc.oneof(
      fc.constantFrom('biosample_set', 'study_set', 'data_object_set', 'workflow_execution_set', 'nope'),
      oddText.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '\ufffd'))),
    );
    const query = fc.record(
      {
        filter: jsonFilterText,
        projection: projectionText,
        max_page_size: fc.oneof(fc.integer({ min: -5, max: 5000 }), oddText),
        page_token: tokenLike(realTokens),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(collection, query, async (c, q) => {
        await getHolds(
          `/nmdcschema/${c}`,
          q as Record<string, string>,
          `GET /nmdcschema/${c} ${JSON.stringify(q).slice(0, 400)}`,
        );
      }),
      { ...params, numRuns: runs(300) },
    );
  });

  it('lookups by id answer the record or 404/4xx for ids with odd, percent-encoded characters', async () => {
    const template = fc.constantFrom(
      '/biosamples/:id',
      '/studies/:id',
      '/data_objects/:id',
      '/planned_processes/:id',
      '/nmdcschema/ids/:id',
      '/nmdcschema/ids/:id/collection-name',
      '/nmdcschema/biosample_set/:id',
    );
    const encode = fc.constantFrom(
      (s: string) => encodeURIComponent(s),
      (s: string) => encodeURI(s).replace(/[?#]/g, encodeURIComponent),
      (s: string) => encodeURIComponent(encodeURIComponent(s)),
      (s: string) => s.replace(/[^\w:.-]/g, (c) => `%${c.charCodeAt(0).toString(16).slice(-2)}`),
    );
    await fc.assert(
      fc.asyncProperty(
        template,
        oddId,
        encode,
        fc.option(projectionText),
        async (tpl, id, enc, projection) => {
          const path = tpl.replace(':id', enc(id.replace(/[\ud800-\udfff]/g, '\ufffd')) || '%20');
          await getHolds(path, projection === null ? {} : { projection }, `GET ${path}`);
        },
      ),
      { ...params, numRuns: runs(250) },
    );
  });

  it('queries:run with a valid token answers 2xx or 4xx for any command body', async () => {
    await fc.assert(
      fc.asyncProperty(commandBody(realCursorIds), async (body) => {
        const res = await request(t.app)
          .post('/queries:run')
          .set('Authorization', `Bearer ${adminToken}`)
          .set('Content-Type', 'application/json')
          .send(body)
          .timeout(REQUEST_DEADLINE_MS);
        holds(res, `POST /queries:run ${body.slice(0, 400)}`);
      }),
      { ...params, numRuns: runs(300) },
    );
  });

  it('/token answers 200 or 4xx with a detail for any form', async () => {
    const saved = { ...loginLimits };
    loginLimits.attemptsPerAddress = 1_000_000;
    try {
      await fc.assert(
        fc.asyncProperty(tokenForm, fc.boolean(), async (form, basic) => {
          const req = request(t.app).post('/token').type('form').timeout(REQUEST_DEADLINE_MS);
          if (basic)
            req.set(
              'Authorization',
              `Basic ${Buffer.from(`${form.client_id ?? ''}:${form.client_secret ?? ''}`).toString('base64')}`,
            );
          const res = await req.send(form as Record<string, string>);
          holds(res, `POST /token ${JSON.stringify(form).slice(0, 300)}`);
          expect(res.status).not.toBe(200);
        }),
        { ...params, numRuns: runs(150) },
      );
    } finally {
      Object.assign(loginLimits, saved);
    }
  });

  it('leaves Object.prototype unpolluted and the service healthy after the whole run', async () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTOTYPE_KEYS);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const health = await get('/health').expect(200);
    expect(health.body).toBeTypeOf('object');
    // Every class of answer was reached, not only rejections.
    expect([...seen.keys()].some((s) => s === 200)).toBe(true);
    expect([...seen.keys()].some((s) => s >= 400)).toBe(true);
  });
});
