/**
 * Single hostile requests against the whole app listening on 127.0.0.1: each answers with a
 * status and a `detail` (or the right result), and a `GET /version` sent while it is handled
 * answers within 100 ms, so no request holds the event loop. Each was a freeze or a 500 before:
 * schema patterns, numerals and aggregation regexes ran on V8's backtracking engine, and deep
 * bodies overflowed the stack.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setBcryptCost } from '../../src/accounts/index.ts';
import type { Doc } from '../../src/store/port.ts';
import { MAX_NESTING_DEPTH } from '../../src/store/nesting.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { mainThreadCpuMs, TICK_MS } from '../support/thread-cpu.ts';
import { form } from './process-faults.ts';

setBcryptCost(4);

/** The longest a `GET /version` may wait while a hostile request is handled (see `versionProbe`). */
const VERSION_BOUND_MS = 100;
const ADMIN = { ADMIN_USERNAME: 'hostile-root', ADMIN_PASSWORD: 'hostile requests meet a calm server' };

let t: TestServer;
let token: string;
const bait = `${'a'.repeat(30)}!`;

const biosample: Doc = {
  id: 'nmdc:bsm-11-hostile1',
  type: 'nmdc:Biosample',
  name: 'Hostile core',
  associated_studies: ['nmdc:sty-11-hostile1'],
  alternative_identifiers: [bait],
  env_broad_scale: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00000446', type: 'nmdc:OntologyClass' },
  },
  env_local_scale: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00000114', type: 'nmdc:OntologyClass' },
  },
  env_medium: {
    type: 'nmdc:ControlledIdentifiedTermValue',
    term: { id: 'ENVO:00001998', type: 'nmdc:OntologyClass' },
  },
  ph: 6.1,
};

interface Handled {
  status: number;
  body: any;
  /** The longest wait of a `GET /version` sent while the request was handled. */
  versionWaitMs: number;
}

/**
 * One keep-alive connection that asks `GET /version` and resolves when the whole answer is in: as
 * little client work as possible shares the event loop with the server under test (test files run
 * in forks: the server and this file share the process's main thread).
 *
 * A wait is the loop's CPU time meanwhile (plus a tick), or its wall time when less: a request
 * that holds the loop holds it in CPU, while the other test files running on these two cores
 * stretch a wait's wall time without the loop doing anything (a 52 ms wait read 75-190 ms with
 * both cores busy elsewhere).
 */
function versionProbe(url: string): { ask: () => Promise<number>; close: () => void } {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.setNoDelay(true);
  let received = '';
  let waiting: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    const head = received.indexOf('\r\n\r\n');
    const length = Number(/content-length: *(\d+)/i.exec(received)?.[1]);
    if (head >= 0 && received.length >= head + 4 + length) {
      expect(received.startsWith('HTTP/1.1 200')).toBe(true);
      received = '';
      waiting?.();
    }
  });
  return {
    ask: () =>
      new Promise<number>((resolve) => {
        const started = performance.now();
        const cpu = mainThreadCpuMs();
        waiting = () => {
          const wall = performance.now() - started;
          const used = mainThreadCpuMs();
          resolve(cpu === undefined || used === undefined ? wall : Math.min(wall, used - cpu + TICK_MS));
        };
        socket.write(`GET /version HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
      }),
    close: () => socket.destroy(),
  };
}

/**
 * A request through node:http (less client work than fetch); its status and body's text (parsed
 * by the caller once the probing is over: this process's parse of a large answer would delay the
 * probes as much as the server's own work).
 */
function send(path: string, init: RequestInit): Promise<{ status: number; text: () => string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${t.url}${path}`,
      { method: init.method ?? 'GET', headers: init.headers as Record<string, string>, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        // Joined when asked, after the probing: a 35 MB answer's join and decoding here took tens of ms.
        res.on('end', () =>
          resolve({ status: res.statusCode!, text: () => Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(init.body as string | undefined);
  });
}

/**
 * Sends the request and, until it is answered, `GET /version` one after another (at least once):
 * a request that holds the event loop makes one of them wait as long. A freeze is the same every
 * time, while this machine's other work can delay one probe: the request is sent again (up to
 * five times) while the longest wait is over the bound, and the best attempt is answered.
 */
async function whileHandled(
  path: string,
  init: RequestInit | (() => Promise<RequestInit>) = {},
): Promise<Handled> {
  let best: Handled | undefined;
  const probe = versionProbe(t.url);
  try {
    for (let attempt = 0; attempt < 5 && !(best && best.versionWaitMs < VERSION_BOUND_MS); attempt++) {
      // A request that can be sent once (a getMore) is made anew for each attempt.
      const request = typeof init === 'function' ? await init() : init;
      let answered = false;
      const hostile = send(path, request).finally(() => (answered = true));
      let versionWaitMs = 0;
      do versionWaitMs = Math.max(versionWaitMs, await probe.ask());
      while (!answered);
      const { status, text } = await hostile;
      const handled = { status, body: JSON.parse(text()), versionWaitMs };
      if (!best || handled.versionWaitMs < best.versionWaitMs) best = handled;
    }
  } finally {
    probe.close();
  }
  return best!;
}

const asJson = (body: unknown, auth = false): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${token}` } : {}) },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

function changesheet(text: string, filename = 'c.tsv'): RequestInit {
  const boundary = 'hostile-boundary';
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="uploaded_file"; filename="${filename}"\r\n` +
    `Content-Type: text/plain\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  return { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body };
}

const aggregate = (pipeline: unknown[]) =>
  whileHandled('/queries:run', asJson({ aggregate: 'biosample_set', pipeline }, true));

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

beforeAll(async () => {
  t = await startTestServer(ADMIN);
  await t.store.upsertMany('biosample_set', [biosample]);
  await t.searchIndex.index('biosample_set', [biosample]);
  const login = await fetch(
    `${t.url}/token`,
    form({ grant_type: 'password', username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_PASSWORD }),
  );
  token = ((await login.json()) as { access_token: string }).access_token;
  // One-time costs of each path's first use (compiling the schema's validators, most of all) are
  // paid here with harmless requests, not by the hostile ones.
  const warmUps: Array<[string, RequestInit]> = [
    ['/metadata/json:validate', asJson({ biosample_set: [biosample] })],
    // A large record, checked on the validation thread: the thread starts and compiles once here.
    [
      '/metadata/json:validate',
      asJson({ biosample_set: [{ ...biosample, alternative_identifiers: Array(20_000).fill('x:y') }] }),
    ],
    // A long value, not the hostile one: RE2 and the answer's serialisation meet long text once first.
    [
      '/metadata/changesheets:validate',
      changesheet(`id\taction\tattribute\tvalue\n${biosample.id}\tupdate\tph\t${'7.'.repeat(40_000)}\n`),
    ],
    ['/biosamples?filter=depth:>5', {}],
    [
      '/queries:run',
      asJson(
        {
          aggregate: 'biosample_set',
          pipeline: [
            { $limit: 1 },
            { $match: { name: { $regex: 'H' } } },
            { $project: { m: { $regexMatch: { input: 'a', regex: 'a' } } } },
          ],
        },
        true,
      ),
    ],
    [
      '/queries:run',
      asJson({ update: 'biosample_set', updates: [{ q: { id: 'none' }, u: { $set: { name: 'x' } } }] }, true),
    ],
  ];
  for (const [path, init] of warmUps) {
    const res = await fetch(`${t.url}${path}`, init);
    expect(res.status, `${path}: ${await res.clone().text()}`).toBeLessThan(500);
    await res.arrayBuffer();
  }
}, 120_000);
afterAll(async () => t?.close());

describe('requests that held the event loop', () => {
  it('validates a biosample whose geo_loc_name is 2,400 letters (a schema pattern) without holding the loop', async () => {
    const { status, body, versionWaitMs } = await whileHandled(
      '/metadata/json:validate',
      asJson({ biosample_set: [{ ...biosample, geo_loc_name: 'a'.repeat(2400) }] }),
    );
    expect(status).toBe(200);
    expect(body.result).toBe('errors');
    expect(body.detail.biosample_set.join('\n')).toMatch(/geo_loc_name/);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('types a changesheet value of 80,000 digits then "x" without holding the loop', async () => {
    const sheet = `id\taction\tattribute\tvalue\n${biosample.id}\tupdate\tph\t${'1'.repeat(80_000)}x\n`;
    const { status, body, versionWaitMs } = await whileHandled(
      '/metadata/changesheets:validate',
      changesheet(sheet),
    );
    // Not a number: it stays text, and the schema refuses text for ph.
    expect(status).toBe(422);
    expect(JSON.stringify(body.detail)).toMatch(/ph/);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('refuses a changesheet line of 900,000 tabs with a 400 naming it, without holding the loop', async () => {
    // The parser built one record of 900,001 fields in one step: 130-160 ms.
    for (const [name, separator] of [
      ['sheet.tsv', '\t'],
      ['sheet.csv', ','],
    ] as const) {
      const header = ['id', 'action', 'attribute', 'value'].join(separator);
      const { status, body, versionWaitMs } = await whileHandled(
        '/metadata/changesheets:validate',
        changesheet(
          `${header}\n${biosample.id}${separator}update${separator}name${separator}x\n${separator.repeat(900_000)}\n`,
          name,
        ),
      );
      expect(status, name).toBe(400);
      expect(body.detail, name).toBe(
        `line 3: the line has more than 10000 separators ('${separator === '\t' ? '\\t' : ','}'); ` +
          'a changesheet row has the columns id, action, attribute and value',
      );
      expect(versionWaitMs, name).toBeLessThan(VERSION_BOUND_MS);
    }
  });

  it('reads a compact filter value of 15,000 digits then "x" without holding the loop', async () => {
    const { status, body, versionWaitMs } = await whileHandled(
      `/biosamples?filter=depth:>${'1'.repeat(15_000)}x`,
    );
    expect(status).toBe(200);
    expect(body.meta.count).toBe(0);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('reads a Content-Type or Accept of 16,000 semicolons without holding the loop, on a read and on a body', async () => {
    const header = `a/b${';'.repeat(16_000)}`;
    // The Accept header is read by the response validator (on in tests, as in development).
    for (const name of ['content-type', 'accept']) {
      const read = await whileHandled('/nmdcschema/collection_names', { headers: { [name]: header } });
      expect(read.status, name).toBe(200);
      expect(read.body).toContain('biosample_set');
      expect(read.versionWaitMs, name).toBeLessThan(VERSION_BOUND_MS);
    }
    const body = await whileHandled('/metadata/json:validate', {
      method: 'POST',
      headers: { 'content-type': header },
      body: '{}',
    });
    expect(body.status).toBe(415);
    expect(body.body.detail).toBe(
      'Content-Type a/b is not accepted by POST /metadata/json:validate; send application/json',
    );
    expect(body.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('validates a record of 10,000 unexpected properties without holding the loop, describing 1,000', async () => {
    const record: Record<string, unknown> = { id: 'nmdc:bsm-11-hostile2', type: 'nmdc:Biosample' };
    for (let i = 0; i < 10_000; i++) record[`f${i}`] = 1;
    const handled = await whileHandled('/metadata/json:validate', asJson({ biosample_set: [record] }));
    expect(handled.status).toBe(200);
    const messages = handled.body.detail.biosample_set as string[];
    // The message naming unexpected properties was written again for each name: 90 s for 30,000.
    expect(messages.find((m) => m.startsWith('Additional properties'))).toMatch(
      /^Additional properties are not allowed \('f0', 'f1', .*, 'f994' were unexpected\) in \/biosample_set\/0/,
    );
    expect(messages.at(-1)).toBe(
      '... and 9005 more schema errors in /biosample_set/0 (the first 1000 are described)',
    );
    expect(handled.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('validates a record of 250,000 array items each breaking a pattern without holding the loop', async () => {
    // Ajv checks a record in one step, building every error first: 150-300 ms on the event loop.
    // Such a record is checked on the validation thread.
    const record = {
      ...biosample,
      id: 'nmdc:bsm-11-hostile3',
      alternative_identifiers: Array(250_000).fill('x'),
    };
    const handled = await whileHandled('/metadata/json:validate', asJson({ biosample_set: [record] }));
    expect(handled.status).toBe(200);
    const messages = handled.body.detail.biosample_set as string[];
    expect(messages[0]).toMatch(
      /^'x' does not match '\^\[a-zA-Z0-9\].*' in \/biosample_set\/0\/alternative_identifiers\/0 \(id 'nmdc:bsm-11-hostile3'\)$/,
    );
    expect(messages[999]).toMatch(
      /^'x' does not match .* in \/biosample_set\/0\/alternative_identifiers\/999 /,
    );
    expect(messages.at(-1)).toBe(
      '... and 249000 more schema errors in /biosample_set/0 (the first 1000 are described)',
    );
    expect(handled.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('runs 5,000 update statements and a 10,000-path projection without holding the loop', async () => {
    const updates = Array.from({ length: 5000 }, (_, i) => ({
      q: { id: `nmdc:bsm-11-none${i}` },
      u: { $set: { name: 'x' } },
    }));
    const update = await whileHandled('/queries:run', asJson({ update: 'biosample_set', updates }, true));
    expect(update.body).toEqual({ ok: 1, n: 0, nModified: 0 });
    expect(update.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    const projection = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, 1]));
    projection.name = 1;
    const find = await whileHandled(
      '/queries:run',
      asJson({ find: 'biosample_set', filter: {}, projection }, true),
    );
    expect(find.body.cursor.firstBatch).toEqual([{ id: biosample.id, name: biosample.name }]);
    expect(find.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('runs $regex "^(a+)+$" in a $match after the first stage on the linear-time engine', async () => {
    const { status, body, versionWaitMs } = await aggregate([
      { $limit: 1 },
      { $addFields: { x: bait } },
      { $match: { x: { $regex: '^(a+)+$' } } },
    ]);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.cursor.firstBatch).toEqual([]);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);

    const matching = await aggregate([
      { $limit: 1 },
      { $addFields: { x: bait.slice(0, -1) } },
      { $match: { x: { $regex: '^(A+)+$', $options: 'i' } } },
      { $project: { _id: 0, id: 1 } },
    ]);
    expect(matching.body.cursor.firstBatch).toEqual([{ id: biosample.id }]);
  });

  it('answers 59 MB of aggregation results, and pages them with getMore, without holding the loop', async () => {
    // 100 records of 590 KB: serialised again for the answer (which carries a batch twice), and
    // kept for getMore a chunk after another without a turn, they held the event loop 100-250 ms;
    // results are now answered and kept as the text their process wrote.
    const pipeline = [
      { $limit: 1 },
      { $project: { _id: 0, r: { $range: [0, 100] } } },
      { $unwind: '$r' },
      { $project: { r: 1, a: { $range: [0, 100_000] } } },
    ];
    const { status, body, versionWaitMs } = await aggregate(pipeline);
    expect(status).toBe(200);
    expect(body.cursor.firstBatch).toHaveLength(25);
    expect(body.cursor.firstBatch[24].r).toBe(24);
    expect(body.cursor.firstBatch[24].a).toHaveLength(100_000);
    expect(body.cursor.firstBatch[24].a[99_999]).toBe(99_999);
    expect(body.cursor.batch).toEqual(body.cursor.firstBatch);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    // A cursor answers one getMore: each attempt opens its own.
    const more = await whileHandled('/queries:run', async () => {
      const opened = await send('/queries:run', asJson({ aggregate: 'biosample_set', pipeline }, true));
      const id = (JSON.parse(opened.text()) as { cursor: { id: string } }).cursor.id;
      // 20 records of 590 KB: a batch ends at 16 MiB of records (large-answers.test.ts).
      return asJson({ getMore: id, batchSize: 20 }, true);
    });
    expect(more.status).toBe(200);
    expect(more.body.cursor.nextBatch.map((r: { r: number }) => r.r)).toEqual(
      Array.from({ length: 20 }, (_, i) => 25 + i),
    );
    expect(more.body.cursor.nextBatch[19].a).toHaveLength(100_000);
    expect(more.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  }, 60_000);

  it('keeps an 8 MiB result record for getMore in parts no larger than MongoDB keeps a value', async () => {
    const doubled = (times: number) => ({
      $reduce: { input: { $range: [0, times] }, initialValue: 'x', in: { $concat: ['$$value', '$$value'] } },
    });
    const kept: number[] = [];
    const state = t.store.state;
    const put = state.put.bind(state);
    state.put = async (kind, key, value, ttl) => {
      if (kind === 'query-results') kept.push(JSON.stringify(value).length);
      return put(kind, key, value, ttl);
    };
    try {
      // Not timed: a cursor answers one getMore, which a timed attempt sent again would not find.
      const first = await send(
        '/queries:run',
        asJson(
          {
            aggregate: 'biosample_set',
            pipeline: [
              { $limit: 1 },
              { $project: { _id: 0, r: { $range: [0, 3] } } },
              { $unwind: '$r' },
              { $project: { r: 1, s: { $cond: [{ $eq: ['$r', 1] }, doubled(23), 'small'] } } },
            ],
            cursor: { batchSize: 1 },
          },
          true,
        ),
      );
      const opened = JSON.parse(first.text());
      expect(opened.cursor.firstBatch).toEqual([{ r: 0, s: 'small' }]);
      const more = await send('/queries:run', asJson({ getMore: opened.cursor.id, batchSize: 2 }, true));
      const { nextBatch } = JSON.parse(more.text()).cursor;
      expect(nextBatch.map((d: { r: number }) => d.r)).toEqual([1, 2]);
      expect(nextBatch[0].s).toBe('x'.repeat(2 ** 23));
      expect(nextBatch[1].s).toBe('small');
      // The record before, three parts of the 8 MiB record (4 MiB each at most), the record after.
      expect(kept).toHaveLength(5);
      expect(Math.max(...kept)).toBeLessThan(4 * 1024 * 1024 + 16);
    } finally {
      state.put = put;
    }
  });

  it('runs $regexMatch, $regexFind and $regexFindAll on the linear-time engine, empty matches included', async () => {
    const { status, body, versionWaitMs } = await aggregate([
      { $limit: 1 },
      {
        $project: {
          _id: 0,
          bad: { $regexMatch: { input: bait, regex: '^(a+)+$' } },
          found: { $regexFind: { input: 'nmdc:bsm-11-x1', regex: '(\\w+):(bsm)' } },
          empties: { $regexFindAll: { input: 'a😀c', regex: 'x*' } },
        },
      },
    ]);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.cursor.firstBatch).toEqual([
      {
        bad: false,
        found: { match: 'nmdc:bsm', idx: 0, captures: ['nmdc', 'bsm'] },
        // MongoDB's idx counts code points; an empty match moves one character on.
        empties: [0, 1, 2, 3].map((idx) => ({ match: '', idx, captures: [] })),
      },
    ]);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });

  it('refuses with a 422 saying why a pattern RE2 cannot run, in any stage', async () => {
    const later = await aggregate([{ $limit: 1 }, { $match: { name: { $regex: '(?=Hostile)Hostile' } } }]);
    expect(later.status).toBe(422);
    expect(later.body.detail).toMatch(/lookaround and backreferences are not available/);
    const expression = await aggregate([
      { $project: { x: { $regexMatch: { input: '$name', regex: '(a)\\1' } } } },
    ]);
    expect(expression.status).toBe(422);
    expect(expression.body.detail).toMatch(/linear-time engine/);
  });

  it('refuses a $dateFromString format that would build a backtracking expression', async () => {
    const { status, body, versionWaitMs } = await aggregate([
      { $limit: 1 },
      { $project: { x: { $dateFromString: { dateString: `2020${bait}0101`, format: '%Y(a+)+%m%d' } } } },
    ]);
    expect(status).toBe(422);
    expect(body.detail).toMatch(/\$dateFromString format may hold only %-specifiers/);
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    const twice = await aggregate([
      { $project: { x: { $dateFromString: { dateString: '2020', format: '%U%U' } } } },
    ]);
    expect(twice.status).toBe(422);
    expect(twice.body.detail).toMatch(/%U more than once/);
    const fine = await aggregate([
      { $limit: 1 },
      { $project: { _id: 0, x: { $dateFromString: { dateString: '2020-03-04', format: '%Y-%m-%d' } } } },
    ]);
    expect(fine.status).toBe(200);
    expect(fine.body.cursor.firstBatch[0].x).toBe('2020-03-04T00:00:00.000Z');
  });

  it('runs an update’s $pull condition on the linear-time engine', async () => {
    const { status, body, versionWaitMs } = await whileHandled(
      '/queries:run',
      asJson(
        {
          update: 'biosample_set',
          updates: [
            { q: { id: biosample.id }, u: { $pull: { alternative_identifiers: { $regex: '^(a+)+$' } } } },
          ],
        },
        true,
      ),
    );
    expect([200, 422], JSON.stringify(body)).toContain(status);
    if (status === 200) expect(body).toMatchObject({ ok: 1, n: 1 });
    else expect(body.detail).toBeTypeOf('string');
    expect(versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
  });
});

describe('a changesheet of 8,000 records', () => {
  it('is validated (public) and submitted without holding the loop', async () => {
    const ids = Array.from({ length: 8000 }, (_, i) => `nmdc:bsm-11-sheet${String(i).padStart(5, '0')}`);
    // The study the records name, so their references resolve.
    await t.store.upsertMany('study_set', [
      { id: 'nmdc:sty-11-hostile1', type: 'nmdc:Study', study_category: 'research_study' },
    ]);
    await t.store.upsertMany(
      'biosample_set',
      // Valid records (the template's identifier is regex bait): the sheet's changes pass the schema.
      ids.map((id) => ({ ...biosample, id, alternative_identifiers: [`gold:Gb${id.slice(-5)}`] })),
    );
    let round = 0;
    /** A sheet setting every record's description, a new value each time it is sent. */
    const sheet = (auth: boolean) => {
      const value = `checked ${++round}`;
      const init = changesheet(
        `id\taction\tattribute\tvalue\n${ids.map((id) => `${id}\tupdate\tdescription\t${value}`).join('\n')}\n`,
      );
      return {
        ...init,
        headers: {
          ...(init.headers as Record<string, string>),
          ...(auth ? { authorization: `Bearer ${token}` } : {}),
        },
      };
    };
    // Planned, applied to copies and answered with every record before and after (24 MB):
    // 0.25 s and more with nothing else answered.
    const validated = await whileHandled('/metadata/changesheets:validate', async () => sheet(false));
    expect(validated.status, JSON.stringify(validated.body).slice(0, 300)).toBe(200);
    expect(Object.keys(validated.body.update_cmd)).toHaveLength(8000);
    expect(validated.body.results_of_updates[7999]).toMatchObject({
      id: ids[7999],
      doc_after: { description: `checked ${round}` },
    });
    expect(validated.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    const submitted = await whileHandled('/metadata/changesheets:submit', async () => sheet(true));
    expect(submitted.status, JSON.stringify(submitted.body).slice(0, 300)).toBe(200);
    expect(submitted.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    expect(await t.store.getById('biosample_set', ids[4000]!)).toMatchObject({
      description: `checked ${round}`,
    });
    await t.store.deleteMany('biosample_set', { id: { $in: ids } });
    await t.store.deleteMany('study_set', { id: 'nmdc:sty-11-hostile1' });
  }, 60_000);
});

describe('large writes of a collection without ids', () => {
  /** Aggregation members of a workflow execution that does not exist, keyed as the store keys them. */
  const members = (from: number, to: number): Doc[] =>
    Array.from({ length: to - from }, (_, k) => {
      const i = from + k;
      return {
        id: `key:${String(i).padStart(32, '0')}`,
        type: 'nmdc:FunctionalAnnotationAggMember',
        was_generated_by: 'nmdc:wfmgan-11-hostile.1',
        gene_function_id: `KEGG.ORTHOLOGY:K${String(i).padStart(5, '0')}`,
        count: i,
      };
    });

  it('checks an update of 40,000 of them and deletes 5,000 without holding the loop', async () => {
    await t.store.upsertMany('functional_annotation_agg', members(0, 40_000));
    // Refused (each would keep a reference to the missing workflow execution), after every record
    // was updated, keyed anew and its references resolved: 40,000 held the loop 0.1-0.2 s.
    const update = await whileHandled(
      '/queries:run',
      asJson(
        { update: 'functional_annotation_agg', updates: [{ q: {}, u: { $inc: { count: 1 } }, multi: true }] },
        true,
      ),
    );
    expect(update.status).toBe(422);
    expect(update.body.detail).toMatch(
      /^The operation was not performed, because performing it would have left behind/,
    );
    expect(update.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    // Deleted on the store's connection by their filter, 5,000 held the loop about 0.2 s.
    const del = await whileHandled('/queries:run', async () => {
      await t.store.upsertMany('functional_annotation_agg', members(0, 5000));
      return asJson(
        { delete: 'functional_annotation_agg', deletes: [{ q: { count: { $lt: 5000 } }, limit: 0 }] },
        true,
      );
    });
    expect(del.body).toEqual({ ok: 1, n: 5000 });
    expect(del.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    expect(await t.store.count('functional_annotation_agg', {})).toBe(35_000);
    await t.store.deleteMany('functional_annotation_agg', {});
  }, 60_000);
});

describe(`JSON nested deeper than ${MAX_NESTING_DEPTH} levels`, () => {
  const deep = `{"biosample_set":[{"id":"nmdc:bsm-11-deep","type":"nmdc:Biosample","x":${nested(10_000)}}]}`;

  it('is refused with a 400 naming the limit by validate, submit and queries:run (not a 500)', async () => {
    for (const [path, auth] of [
      ['/metadata/json:validate', false],
      ['/metadata/json:submit', true],
      ['/queries:run', true],
    ] as const) {
      const body = path === '/queries:run' ? `{"find":"biosample_set","filter":${nested(10_000)}}` : deep;
      const res = await whileHandled(path, asJson(body, auth));
      expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.detail).toBe(
        `The JSON body nests objects and arrays deeper than ${MAX_NESTING_DEPTH} levels, the most accepted (as MongoDB accepts for a document)`,
      );
      expect(res.versionWaitMs).toBeLessThan(VERSION_BOUND_MS);
    }
  });

  it(`accepts ${MAX_NESTING_DEPTH} levels and refuses ${MAX_NESTING_DEPTH + 1}, brackets inside strings not counted`, async () => {
    // The body and the record's list take 2 levels, the record 1: the value nests the rest.
    const body = (levels: number) =>
      `{"biosample_set":[{"id":"nmdc:bsm-11-deep","name":"[[[{{{","x":${nested(levels - 3)}}]}`;
    const at = await fetch(`${t.url}/metadata/json:validate`, asJson(body(MAX_NESTING_DEPTH)));
    expect(at.status).toBe(200);
    expect((await at.json()).result).toBe('errors');
    const over = await fetch(`${t.url}/metadata/json:validate`, asJson(body(MAX_NESTING_DEPTH + 1)));
    expect(over.status).toBe(400);
    expect((await over.json()).detail).toMatch(`deeper than ${MAX_NESTING_DEPTH} levels`);
  });
});
