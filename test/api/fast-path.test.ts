/**
 * The fast path for the hot GETs (src/http/fast-path.ts) against the full chain: the same
 * services behind two apps, one with the fast path and one without, asked the same requests over
 * HTTP; status, every header (in order) and body must be the same, apart from Date and a generated
 * X-Request-Id, and so must the request log lines and the request counters of /metrics.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import express, { type Response } from 'express';
import { buildApp, createServer } from '../../src/app.ts';
import {
  fastPathKeptVerdicts,
  fastPathServed,
  queryDecides,
  warmFastPath,
} from '../../src/http/fast-path.ts';
import { loadConfig } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../support/server.ts';

interface Answer {
  status: number;
  headers: string[];
  body: string;
}

interface Side {
  app: ReturnType<typeof buildApp>;
  server: http.Server;
  port: number;
  lines: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const expressJson = express.response.json;

let t: TestApp;
let on: Side;
let off: Side;
/** As deployed (no response validation): the hot answers are written directly. */
let direct: Side;
/** The same, each answer written by Express's `res.json`. */
let canonical: Side;

/**
 * One app over the shared services, listening as the service does. `expressAnswers` has every answer written by Express's own
 * `res.json` (replaced on each response by a function calling it, as the response validator
 * does, so that answers are not written directly: src/http/answer.ts).
 */
async function side(
  fastPath: boolean,
  options: { validateResponses?: boolean; expressAnswers?: boolean } = {},
): Promise<Side> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      callback();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const validateResponses = options.validateResponses ?? t.config.validateResponses;
  const app = buildApp({ ...t, logger, config: { ...t.config, fastPath, validateResponses } });
  // As the service listens (src/main.ts), but the side with Express's answers: Node's own
  // request and response objects, given their prototypes on each request.
  const server = options.expressAnswers
    ? http.createServer((req, res) => {
        (res as unknown as Response).json = function (this: Response, value: unknown) {
          return expressJson.call(this, value);
        };
        app(req, res);
      })
    : createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { app, server, port: (server.address() as AddressInfo).port, lines };
}

/** One request as sent (the path byte for byte), its answer with Date and generated ids normalised. */
function ask(
  s: Side,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: s.port, method, path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = res.rawHeaders;
          const out: string[] = [];
          for (let i = 0; i < raw.length; i += 2) {
            const name = raw[i]!.toLowerCase();
            if (name === 'date') continue;
            const value = name === 'x-request-id' && UUID.test(raw[i + 1]!) ? '<generated>' : raw[i + 1]!;
            out.push(`${name}: ${value}`);
          }
          // The store's own time for the query, and a new cursor's random name, differ every time
          // (and with them the length, checked here against the body as sent).
          // An answer to HEAD has no body to check its length against: a listing's (which holds
          // those; with or without a trailing slash) is left out.
          const sent = Buffer.concat(chunks);
          const length =
            method === 'HEAD' && /^\/(biosamples|studies|data_objects|planned_processes)\/?(\?|$)/.test(path)
              ? out.findIndex((h) => h.startsWith('content-length: '))
              : out.indexOf(`content-length: ${sent.length}`);
          if (length >= 0) out[length] = 'content-length: <of the body>';
          const body = sent
            .toString('utf8')
            .replace(/"db_response_time_ms":\d+/, '"db_response_time_ms":0')
            .replace(/"next_cursor":"[^"]+"/, '"next_cursor":"<generated>"');
          resolve({ status: res.statusCode!, headers: out, body });
        });
      },
    );
    req.on('error', reject);
    // Node sends a GET's body without saying how long it is unless told.
    if (body !== undefined) req.setHeader('Content-Length', Buffer.byteLength(body));
    req.end(body);
  });
}

/** A GET asked of both sides (so that their logs and counters stay comparable); the fast side's answer. */
async function both(path: string): Promise<Answer> {
  const ours = await ask(on, 'GET', path);
  expect(ours).toEqual(await ask(off, 'GET', path));
  return ours;
}

/** The log lines of one side, without what differs between any two requests (time, pid, ids, duration). */
function logLines(s: Side): unknown[] {
  return s.lines.map((line) => {
    const {
      time: _t,
      pid: _p,
      hostname: _h,
      responseTime,
      req,
      ...rest
    } = JSON.parse(line) as Record<string, any>;
    const id = req?.id && UUID.test(req.id) ? '<generated>' : req?.id;
    return {
      ...rest,
      ...(req ? { req: { ...req, id } } : {}),
      ...(responseTime !== undefined ? { responseTime: typeof responseTime } : {}),
    };
  });
}

/** The request counters of one side's /metrics. */
async function counters(s: Side): Promise<string[]> {
  return (await ask(s, 'GET', '/metrics')).body
    .split('\n')
    .filter(
      (line) =>
        line.startsWith('nmdc_http_requests_total') ||
        line.startsWith('nmdc_http_request_duration_seconds_count'),
    )
    .sort();
}

const BIOSAMPLE = 'nmdc:bsm-11-fast01';
const STUDY = 'nmdc:sty-11-fast01';
const DATA_OBJECT = 'nmdc:dobj-11-fast01';

beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany('study_set', [{ id: STUDY, type: 'nmdc:Study', name: 'Fast study' }]);
  await t.store.upsertMany(
    'biosample_set',
    Array.from({ length: 30 }, (_, i) => ({
      id: i === 0 ? BIOSAMPLE : `nmdc:bsm-11-fast${String(i + 1).padStart(2, '0')}`,
      type: 'nmdc:Biosample',
      name: `Soil sample ${i}`,
      associated_studies: [STUDY],
      env_broad_scale: { term: { id: 'ENVO:00000446', name: 'terrestrial biome' } },
    })),
  );
  await t.store.upsertMany('data_object_set', [
    { id: DATA_OBJECT, type: 'nmdc:DataObject', name: 'reads.fastq.gz', description: 'reads' },
  ]);
  on = await side(true);
  off = await side(false);
  direct = await side(true, { validateResponses: false });
  canonical = await side(false, { validateResponses: false, expressAnswers: true });
});
afterAll(async () => {
  for (const s of [on, off, direct, canonical]) {
    if (!s) continue;
    s.server.closeAllConnections();
    await new Promise<void>((resolve) => s.server.close(() => resolve()));
  }
  await t?.close();
});

const id = encodeURIComponent(BIOSAMPLE);
const deep = encodeURIComponent(`${'{"a":'.repeat(200)}1${'}'.repeat(200)}`);
const list = '/nmdcschema/biosample_set';

/** Requests the fast path answers (each must be answered by it). */
const HOT: string[] = [
  '/version',
  `/nmdcschema/ids/${id}`,
  `/nmdcschema/ids/${BIOSAMPLE}`,
  `/nmdcschema/ids/${encodeURIComponent(STUDY)}`,
  '/nmdcschema/ids/nmdc:bsm-11-nothere',
  `/nmdcschema/biosample_set/${id}`,
  `/nmdcschema/biosample_set/${id}?projection=name`,
  '/nmdcschema/biosample_set/nmdc:bsm-11-nothere',
  `/nmdcschema/study_set/${id}`,
  `${list}?filter=%7B%7D&max_page_size=25&projection=id`,
  `${list}?filter=%7B%7D&max_page_size=25`,
  `${list}?max_page_size=5`,
  `${list}?max_page_size=0`,
  `${list}?max_page_size=${'9'.repeat(400)}`,
  `${list}?max_page_size=-1`,
  `${list}?filter=${encodeURIComponent('{"name":{"$regex":"sample 1"}}')}&max_page_size=3`,
  `${list}?filter=${encodeURIComponent('{"name":')}`,
  `${list}?filter=${deep}`,
  `${list}?filter=${encodeURIComponent('{"$where":"1"}')}`,
  `${list}?max_page_size=2&page_token=nonsense`,
  `${list}?max_page_size=5&unknown=1&other=2`,
  `${list}?max_page_size=5&max_page_size=6`,
  '/nmdcschema/data_object_set',
  '/nmdcschema/study_set?projection=name,id',
  '/biosamples?per_page=3',
  '/biosamples?per_page=3&page=2&sort=name:desc',
  `/biosamples?filter=${encodeURIComponent('name.search:sample 1')}&per_page=5`,
  `/biosamples?filter=${encodeURIComponent('nonsense')}`,
  '/biosamples?per_page=2&cursor=*',
  `/biosamples/${id}`,
  '/biosamples/nmdc:bsm-11-nothere',
  '/studies',
  `/studies/${encodeURIComponent(STUDY)}`,
  '/data_objects?per_page=1',
  `/data_objects/${encodeURIComponent(DATA_OBJECT)}`,
  '/planned_processes',
  '/planned_processes/nmdc:wfmgan-11-nothere',
  `${list}?`,
  `${list}?&&=&max_page_size=2`,
  `${list}?filter=%E0%A4%A`,
  `${list}?projection=${'id,'.repeat(2000)}id`,
  `/biosamples?filter=${encodeURIComponent(`name.search:${'(a|a)*'.repeat(50)}`)}`,
];

/** Requests the full chain answers (a refused query, an odd path, a method or header it leaves). */
const FULL: Array<{ method?: string; path: string; headers?: Record<string, string>; body?: string }> = [
  { path: `${list}?max_page_size=abc` },
  { path: `${list}?filter=${'x'.repeat(60_000)}` },
  { path: '/biosamples?per_page=0' },
  { path: '/biosamples?page=abc' },
  { path: `/nmdcschema/ids/${'9'.repeat(5000)}` },
  { path: '/nmdcschema/ids/%E0%A4%A' },
  { path: `/nmdcschema/biosample_set/%E0%A4%A` },
  { path: `/nmdcschema/${'a'.repeat(3000)}` },
  { path: '/nmdcschema/not_a_collection' },
  { path: '/nmdcschema/not_a_collection/x' },
  { path: '/nmdcschema/version' },
  { path: '/nmdcschema/collection_names' },
  { path: `/nmdcschema/ids/${id}/collection-name` },
  { path: '/VERSION' },
  { path: '/version/' },
  { path: '/Biosamples' },
  { path: '/biosamples/' },
  { path: '//version' },
  { path: '/nmdcschema//x' },
  { method: 'POST', path: '/version' },
  { method: 'DELETE', path: `/nmdcschema/ids/${id}` },
  { path: '/version', headers: { Origin: 'http://localhost:3000' } },
  { path: `/nmdcschema/ids/${id}`, headers: { Origin: 'https://evil.example' } },
  { path: `/nmdcschema/ids/${id}`, headers: { 'Content-Type': 'application/json' }, body: '{"a":1}' },
  { path: '/version', headers: { 'Content-Type': 'application/json' }, body: '{"a":' },
];

describe('FAST_PATH', () => {
  it('is on unless turned off', () => {
    expect(loadConfig({}).fastPath).toBe(true);
    expect(loadConfig({ FAST_PATH: 'false' }).fastPath).toBe(false);
    expect(() => loadConfig({ FAST_PATH: 'sometimes' })).toThrow('FAST_PATH must be true or false');
  });
});

describe('the fast path answers as the full chain', () => {
  it('has the request checks of each of its routes built ahead of the first requests, serving none', async () => {
    const served = fastPathServed(on.app);
    // Every sample path is one the validator takes (a refused one would warm nothing).
    expect(await warmFastPath(on.app)).toEqual({ warmed: 12, refused: [] });
    expect(await warmFastPath(off.app)).toEqual({ warmed: 0, refused: [] });
    expect(fastPathServed(on.app)).toBe(served);
  });

  it('the hot requests: same status, headers and bodies, and the fast path served each', async () => {
    const variants: Array<Record<string, string>> = [
      {},
      { 'X-Request-Id': 'client-chosen.id-1' },
      { 'X-Request-Id': 'bad id with spaces' },
    ];
    for (const headers of variants) {
      for (const path of HOT) {
        const before = fastPathServed(on.app);
        const ours = await ask(on, 'GET', path, headers);
        expect(fastPathServed(on.app), path.slice(0, 100)).toBe(before + 1);
        expect(ours, path.slice(0, 100)).toEqual(await ask(off, 'GET', path, headers));
      }
    }
    expect(fastPathServed(off.app)).toBe(0);
    // Not only errors: records, listings and the version came through.
    const record = JSON.parse((await both(`/nmdcschema/ids/${id}`)).body) as { id: string; name: string };
    expect(record).toMatchObject({ id: BIOSAMPLE, name: 'Soil sample 0' });
    const page = JSON.parse((await both(`${list}?max_page_size=25&projection=id`)).body) as {
      resources: Array<{ id: string }>;
    };
    expect(page.resources.map((r) => r.id)).toContain(BIOSAMPLE);
    expect(page.resources).toHaveLength(25);
  });

  it('HEAD, answered by the GET routes: same status, headers and no body, and the fast path served each', async () => {
    const paths = [
      '/version',
      `/nmdcschema/ids/${id}`,
      '/nmdcschema/ids/nmdc:bsm-11-nothere',
      `${list}?max_page_size=2&projection=id`,
      `${list}?max_page_size=abc`,
      `${list}?max_page_size=2&unknown=1`,
      '/biosamples?per_page=2',
      '/biosamples?per_page=abc',
      `/biosamples/${id}`,
    ];
    for (const path of paths) {
      const before = fastPathServed(on.app);
      const ours = await ask(on, 'HEAD', path);
      expect(fastPathServed(on.app), path).toBe(before + 1);
      expect(ours, path).toEqual(await ask(off, 'HEAD', path));
      expect(ours.body).toBe('');
    }
    expect((await ask(on, 'HEAD', `/nmdcschema/ids/${id}`)).status).toBe(200);
    await ask(off, 'HEAD', `/nmdcschema/ids/${id}`);
  });

  it('the requests it leaves to the full chain: same answers, none served by it', async () => {
    for (const r of FULL) {
      const before = fastPathServed(on.app);
      const ours = await ask(on, r.method ?? 'GET', r.path, r.headers, r.body);
      expect(fastPathServed(on.app), `${r.method ?? 'GET'} ${r.path.slice(0, 80)}`).toBe(before);
      expect(ours, `${r.method ?? 'GET'} ${r.path.slice(0, 80)}`).toEqual(
        await ask(off, r.method ?? 'GET', r.path, r.headers, r.body),
      );
    }
    // A refused query is the validator's canonical 422, naming the parameter.
    const refused = await both(`${list}?max_page_size=abc`);
    expect(refused.status).toBe(422);
    expect(JSON.parse(refused.body).detail).toContain('max_page_size');
  });

  it('logs the same lines and counts the same requests under the same routes', async () => {
    expect(on.lines.length).toBeGreaterThan(HOT.length);
    expect(logLines(on)).toEqual(logLines(off));
    const ours = await counters(on);
    expect(ours).toEqual(await counters(off));
    // Under the operation's path template, as on the full chain.
    const byId = ours.find((line) =>
      line.startsWith('nmdc_http_requests_total{method="GET",route="/nmdcschema/ids/{doc_id}",status="200"}'),
    );
    expect(Number(byId?.split(' ')[1])).toBeGreaterThanOrEqual(10);
  });
});

describe('answers written directly (src/http/answer.ts) are byte for byte those of res.json', () => {
  /** How many answers went through Express's `res.send` during `run`. */
  async function sends(run: () => Promise<void>): Promise<number> {
    const spy = vi.spyOn(express.response, 'send');
    try {
      await run();
      return spy.mock.calls.length;
    } finally {
      spy.mockRestore();
    }
  }

  it('the hot requests, GET and HEAD, with and without conditional headers: same status, headers, bodies', async () => {
    const variants: Array<Record<string, string>> = [
      {},
      { 'X-Request-Id': 'client-chosen.id-2' },
      // Express answers 304 to `If-None-Match: *` on a GET; these go to res.json.
      { 'If-None-Match': '*' },
      { 'If-None-Match': '"abc"' },
      { 'If-Modified-Since': 'Thu, 01 Jan 2026 00:00:00 GMT' },
    ];
    for (const method of ['GET', 'HEAD'])
      for (const headers of variants)
        for (const path of [...HOT, ...FULL.filter((r) => !r.method && !r.body).map((r) => r.path)]) {
          const label = `${method} ${JSON.stringify(headers)} ${path.slice(0, 80)}`;
          const ours = await ask(direct, method, path, headers);
          expect(ours, label).toEqual(await ask(canonical, method, path, headers));
        }
    // Repeated requests took the validator's kept verdicts there (its checks of answers are off),
    // never where it checks answers too.
    expect(fastPathKeptVerdicts(direct.app)).toBeGreaterThan(HOT.length);
    expect(fastPathKeptVerdicts(on.app)).toBe(0);
    const notModified = await ask(direct, 'GET', '/version', { 'If-None-Match': '*' });
    expect(notModified).toEqual(await ask(canonical, 'GET', '/version', { 'If-None-Match': '*' }));
    expect(notModified.status).toBe(304);
    expect(notModified.body).toBe('');
  });

  it('writes the hot 200 answers without res.send, and its bodies are the records', async () => {
    const byId = [
      `/nmdcschema/ids/${id}`,
      `/nmdcschema/biosample_set/${id}`,
      `/biosamples/${id}`,
      `/studies/${encodeURIComponent(STUDY)}`,
      `/data_objects/${encodeURIComponent(DATA_OBJECT)}`,
    ];
    const paths = [
      '/version',
      `/nmdcschema/ids/${id}`,
      `/nmdcschema/biosample_set/${id}`,
      `${list}?max_page_size=25&projection=id`,
      `${list}?max_page_size=3`,
      '/biosamples?per_page=3',
      `/biosamples/${id}`,
      `/studies/${encodeURIComponent(STUDY)}`,
    ];
    const answers: Answer[] = [];
    expect(
      await sends(async () => {
        for (const path of paths) answers.push(await ask(direct, 'GET', path));
      }),
    ).toBe(0);
    // The canonical side writes each through res.send, and both write the same.
    expect(
      await sends(async () => {
        for (const [i, path] of paths.entries())
          expect(await ask(canonical, 'GET', path), path).toEqual(answers[i]);
      }),
    ).toBe(paths.length);
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.headers).toContain('content-type: application/json; charset=utf-8');
      expect(a.headers).toContain('content-length: <of the body>');
    }
    expect(JSON.parse(answers[1]!.body)).toMatchObject({ id: BIOSAMPLE, name: 'Soil sample 0' });
    expect(JSON.parse(answers[6]!.body)).toMatchObject({ id: BIOSAMPLE, type: 'nmdc:Biosample' });
    const page = JSON.parse(answers[3]!.body) as { resources: Array<{ id: string }> };
    expect(page.resources).toHaveLength(25);
    expect(page.resources.map((r) => r.id)).toContain(BIOSAMPLE);
    // Records by id are answered with their stored text, never parsed (the embedded store), and
    // the answers are the bytes res.json writes.
    const store = t.store as unknown as { counters: { bodiesParsed: number } };
    const parsedBefore = store.counters.bodiesParsed;
    const records: Answer[] = [];
    for (const path of byId) records.push(await ask(direct, 'GET', path));
    expect(store.counters.bodiesParsed).toBe(parsedBefore);
    for (const [i, path] of byId.entries()) {
      expect(records[i]!.status, path).toBe(200);
      expect(await ask(canonical, 'GET', path), path).toEqual(records[i]);
    }
    // Errors are still written by Express.
    const missing = '/nmdcschema/ids/nmdc:bsm-11-nothere';
    const errors: Answer[] = [];
    expect(await sends(async () => void errors.push(await ask(direct, 'GET', missing)))).toBe(1);
    expect(errors[0]).toEqual(await ask(canonical, 'GET', missing));
    expect(errors[0]!.status).toBe(404);
  });

  it('a record of a collection without ids is shown without its store key, as res.json shows it', async () => {
    const key = 'key:0123456789abcdef0123456789abcdef';
    await t.store.upsertMany('functional_annotation_agg', [
      {
        id: key,
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: 'nmdc:wfmgan-11-fast01.1',
        gene_function_id: 'KEGG.ORTHOLOGY:K00001',
        count: 3,
      },
    ]);
    for (const path of [
      `/nmdcschema/functional_annotation_agg/${encodeURIComponent(key)}`,
      `/nmdcschema/ids/${encodeURIComponent(key)}`,
    ]) {
      const ours = await ask(direct, 'GET', path);
      expect(ours, path).toEqual(await ask(canonical, 'GET', path));
      expect(ours.status, path).toBe(200);
      expect(JSON.parse(ours.body), path).toEqual({
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: 'nmdc:wfmgan-11-fast01.1',
        gene_function_id: 'KEGG.ORTHOLOGY:K00001',
        count: 3,
      });
    }
  });

  it("takes requests and responses born with the app's prototypes: none is given another", async () => {
    const changed: string[] = [];
    const setPrototypeOf = Object.setPrototypeOf;
    const spy = vi.spyOn(Object, 'setPrototypeOf').mockImplementation((o: object, proto: object | null) => {
      if (o instanceof http.IncomingMessage || o instanceof http.ServerResponse)
        if (Object.getPrototypeOf(o) !== proto)
          changed.push(o instanceof http.IncomingMessage ? 'request' : 'response');
      return setPrototypeOf(o, proto);
    });
    try {
      for (const s of [direct, on, off])
        for (const path of [
          '/version',
          `/nmdcschema/ids/${id}`,
          `${list}?max_page_size=2`,
          '/biosamples?per_page=2',
        ])
          expect((await ask(s, 'GET', path)).status, path).toBe(200);
      // The full chain behind a fast path gives its requests Express's own prototype (as before).
      await ask(on, 'GET', '/nmdcschema/collection_names');
      await ask(direct, 'GET', '/nmdcschema/collection_names');
    } finally {
      spy.mockRestore();
    }
    // Keep both sides' logs comparable.
    for (const path of [
      '/version',
      `/nmdcschema/ids/${id}`,
      `${list}?max_page_size=2`,
      '/biosamples?per_page=2',
    ])
      await ask(canonical, 'GET', path);
    await ask(canonical, 'GET', '/nmdcschema/collection_names');
    // Each request left to the full chain behind a fast path (2 here, 1 per side): its request.
    expect(changed).toEqual(['request', 'request']);
  });

  it('logs the same lines and counts the same requests', async () => {
    expect(direct.lines.length).toBeGreaterThan(HOT.length);
    expect(logLines(direct)).toEqual(logLines(canonical));
    expect(await counters(direct)).toEqual(await counters(canonical));
  });
});

describe("the validator's verdicts kept by the fast path", () => {
  it('answers a request on a kept verdict as the validator would: other ids, the same query, a refused one', async () => {
    await ask(direct, 'GET', `/nmdcschema/ids/${id}`);
    const kept = fastPathKeptVerdicts(direct.app);
    const served = fastPathServed(direct.app);
    const paths = [
      // Each on the verdict kept for the request above: other ids, the same (empty) query.
      `/nmdcschema/ids/${id}?`,
      `/nmdcschema/ids/${encodeURIComponent(STUDY)}?`,
      '/nmdcschema/ids/nmdc:bsm-11-nothere?',
      // A coerced query (a number, a list), checked the first time: each answer gets its own copy.
      `${list}?max_page_size=4&projection=id,name`,
      `${list}?max_page_size=4&projection=id,name`,
      // The same operation and query, another collection (a path parameter of any string).
      `/nmdcschema/study_set?max_page_size=4&projection=id,name`,
    ];
    const answers: Answer[] = [];
    for (const path of paths) {
      const ours = await ask(direct, 'GET', path);
      expect(ours, path).toEqual(await ask(canonical, 'GET', path));
      answers.push(ours);
    }
    expect(fastPathServed(direct.app)).toBe(served + paths.length);
    expect(fastPathKeptVerdicts(direct.app)).toBe(kept + paths.length - 1);
    expect(JSON.parse(answers[1]!.body)).toMatchObject({ id: STUDY, name: 'Fast study' });
    expect(answers[2]!.status).toBe(404);
    const page = JSON.parse(answers[4]!.body) as { resources: Array<Record<string, unknown>> };
    expect(page.resources).toHaveLength(4);
    expect(Object.keys(page.resources[0]!).sort()).toEqual(['id', 'name']);
    expect(JSON.parse(answers[5]!.body).resources).toEqual([{ id: STUDY, name: 'Fast study' }]);
    // A query the validator refused was never kept: it is refused again, by the full chain.
    for (let i = 0; i < 2; i++) {
      const before = fastPathServed(direct.app);
      const refused = await ask(direct, 'GET', `${list}?max_page_size=abc`);
      expect(refused).toEqual(await ask(canonical, 'GET', `${list}?max_page_size=abc`));
      expect(refused.status).toBe(422);
      expect(fastPathServed(direct.app)).toBe(before);
    }
  });

  it('keeps at most 512 verdicts a route, and none for a query over 1,024 characters', async () => {
    const kept = () => fastPathKeptVerdicts(direct.app);
    const path = (i: number) => `${list}?max_page_size=${i + 1}&projection=id`;
    // Other routes' verdicts are their own: the listing's count is what these requests fill.
    await ask(direct, 'GET', path(0));
    let before = kept();
    await ask(direct, 'GET', path(0));
    expect(kept()).toBe(before + 1);
    // 512 other queries of the same route fill its verdicts, and the next one starts them over.
    for (let i = 1; i <= 512; i++) await ask(direct, 'GET', path(i));
    before = kept();
    const again = await ask(direct, 'GET', path(0));
    expect(kept()).toBe(before);
    expect(again).toEqual(await ask(canonical, 'GET', path(0)));
    // A long query is checked each time (its answer as the full chain's).
    const long = `${list}?max_page_size=2&projection=${'id,'.repeat(400)}id`;
    for (let i = 0; i < 2; i++) {
      before = kept();
      expect(await ask(direct, 'GET', long)).toEqual(await ask(canonical, 'GET', long));
      expect(kept()).toBe(before);
    }
  });

  it('are kept only for operations whose other parameters are any string, without a body', () => {
    const doc = (parameters: unknown[], extra: Record<string, unknown> = {}) => ({
      openapi: '3.0.3',
      info: { version: '1', title: 'things' },
      paths: { '/things/{id}': { get: { parameters, ...extra } } },
      components: {
        parameters: {
          Id: { name: 'id', in: 'path', required: true, schema: { $ref: '#/components/schemas/Text' } },
          Alias: { $ref: '#/components/parameters/Id' },
          Loop: { $ref: '#/components/parameters/Loop' },
        },
        schemas: {
          Text: { type: 'string', description: 'any text' },
          Code: { type: 'string', pattern: '^a' },
        },
      },
    });
    const q = { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 5 } };
    const path = (schema: unknown) => ({ name: 'id', in: 'path', required: true, schema });
    expect(queryDecides(doc([{ $ref: '#/components/parameters/Id' }, q]), '/things/{id}')).toBe(true);
    expect(queryDecides(doc([path({ type: 'string', example: 'x' })]), '/things/{id}')).toBe(true);
    expect(queryDecides(doc([path({ $ref: '#/components/schemas/Code' })]), '/things/{id}')).toBe(false);
    expect(queryDecides(doc([path({ type: 'string', enum: ['a'] })]), '/things/{id}')).toBe(false);
    expect(queryDecides(doc([path({ type: 'string', maxLength: 9 })]), '/things/{id}')).toBe(false);
    expect(queryDecides(doc([path({ type: 'string', format: 'uri' })]), '/things/{id}')).toBe(false);
    expect(queryDecides(doc([path({ type: 'integer' })]), '/things/{id}')).toBe(false);
    expect(
      queryDecides(
        doc([path({ type: 'string' }), { name: 'x-key', in: 'header', schema: { type: 'string' } }]),
        '/things/{id}',
      ),
    ).toBe(false);
    expect(
      queryDecides(
        doc([path({ type: 'string' }), { name: 's', in: 'cookie', schema: { type: 'string' } }]),
        '/things/{id}',
      ),
    ).toBe(false);
    expect(
      queryDecides(doc([path({ type: 'string' })], { requestBody: { content: {} } }), '/things/{id}'),
    ).toBe(false);
    expect(queryDecides(doc([{ $ref: '#/components/parameters/Missing' }]), '/things/{id}')).toBe(false);
    // A reference to a reference is followed; a loop of them decides nothing.
    expect(queryDecides(doc([{ $ref: '#/components/parameters/Alias' }]), '/things/{id}')).toBe(true);
    expect(queryDecides(doc([{ $ref: '#/components/parameters/Loop' }]), '/things/{id}')).toBe(false);
    expect(queryDecides(doc([path({ type: 'string' })]), '/other/{id}')).toBe(false);
  });
});
