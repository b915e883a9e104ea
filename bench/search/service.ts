/**
 * The rows of the search bench that measure the service around the query: the request floor
 * against bare `node:http` answering the same bytes, sorted pages (first and deepest page, the
 * cursor) against a request by id, and throughput by id. Our side is the service as deployed
 * (`src/main.ts` in a process of its own, `NODE_ENV=production`, `LOG_LEVEL=info`) over the
 * bench's store; the peer is bare `node:http` in a process of its own. Both are driven by the
 * same client from this process, side by side, and each row also gives the server's CPU per
 * request (from /proc), which the machine's load inflates far less than latency.
 */
import { hammer, passwordToken, percentile, type BenchServer } from '../support/embedded.ts';
import { startBareServer, type BareServer } from '../support/bare-server.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { summarize } from './summary.ts';
import type { Doc } from '../../src/store/port.ts';

type Row = Record<string, string | number>;

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(1)}x` : '-');

/** One sequential GET, timed, its body read; throws unless 200. */
const BENCH_ADMIN = { username: 'bench-sorted-admin', password: 'bench-sorted-admin-password-7741' };

/** Renames a biosample through `POST /queries:run` as the bench's administrator: a write between pages. */
function renamer(url: string): (id: string, name: string) => Promise<void> {
  let token: string | undefined;
  return async (id, name) => {
    token ??= await passwordToken(url, BENCH_ADMIN);
    const res = await fetch(`${url}/queries:run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ update: 'biosample_set', updates: [{ q: { id }, u: { $set: { name } } }] }),
    });
    if (res.status !== 200) throw new Error(`rename: ${res.status} ${(await res.text()).slice(0, 300)}`);
  };
}

async function timedGet(url: string): Promise<{ ms: number; body: string }> {
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.text();
  const elapsed = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url} -> ${res.status} ${body.slice(0, 300)}`);
  return { ms: elapsed, body };
}

interface Timing {
  times: number[];
  /** Server CPU per request, microseconds. */
  cpuUs: number;
}

/** `count` sequential requests of `paths` (rotating), or as many as fit in `seconds` (at least 10). */
async function timeSequential(
  base: string,
  paths: string[],
  count: number,
  seconds: number,
  cpu: () => number,
): Promise<Timing> {
  for (let i = 0; i < Math.min(20, count); i++) await timedGet(base + paths[i % paths.length]); // warm-up
  const deadline = performance.now() + seconds * 1000;
  const c0 = cpu();
  const times: number[] = [];
  for (let i = 0; i < count && (i < 10 || performance.now() < deadline); i++)
    times.push((await timedGet(base + paths[i % paths.length])).ms);
  return { times, cpuUs: ((cpu() - c0) * 1e6) / times.length };
}

/** Ours and the peer, alternating in rounds so that a change in the machine's load shows in both. */
async function sideBySide(
  ours: ServerProcess,
  bare: BareServer | ServerProcess,
  paths: string[],
  count: number,
  seconds: number,
): Promise<{ ours: Timing; bare: Timing }> {
  const rounds = 4;
  const acc = { ours: { times: [] as number[], cpu: 0 }, bare: { times: [] as number[], cpu: 0 } };
  for (let r = 0; r < rounds; r++) {
    for (const [side, server] of [
      ['ours', ours],
      ['bare', bare],
    ] as const) {
      const t = await timeSequential(server.url, paths, Math.ceil(count / rounds), seconds / rounds, () =>
        server.cpu(),
      );
      acc[side].times.push(...t.times);
      acc[side].cpu += t.cpuUs * t.times.length;
    }
  }
  const timing = (a: { times: number[]; cpu: number }) => ({ times: a.times, cpuUs: a.cpu / a.times.length });
  return { ours: timing(acc.ours), bare: timing(acc.bare) };
}

export interface ServiceRows {
  floor: Row[];
  sorted: Row[];
}

/** Throughput with 10 connections: requests a second, the worst p99 of its rounds, the server's CPU per request. */
interface Throughput {
  rps: number;
  p99: number;
  cpuUs: number;
}

/**
 * The throughput by id of each server, measured in alternating rounds of about a second (the order
 * turned each round), so that a change in the machine's load lands on all of them alike rather than
 * on whichever ran during it. Run one after the other, the same two commits read 3.65-5.02x bare
 * between runs; in alternating rounds 4.01-6.13x: the 2-core machine's slow spells last minutes,
 * so compare several runs.
 */
async function alternatingThroughput(
  servers: Array<BareServer | ServerProcess>,
  byId: string[],
  seconds: number,
): Promise<Throughput[]> {
  const rounds = Math.max(2, Math.round(seconds));
  const each = seconds / rounds;
  const acc = servers.map(() => ({ requests: 0, cpu: 0, p99: 0 }));
  for (let r = 0; r < rounds; r++) {
    const order = servers.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      const c0 = servers[i]!.cpu();
      const f = await hammer(servers[i]!.url, byId, each, 10);
      if (f.errors || f.non2xx) throw new Error(`throughput run: ${f.errors} errors, ${f.non2xx} non-2xx`);
      acc[i]!.requests += f.rps * each;
      acc[i]!.cpu += servers[i]!.cpu() - c0;
      acc[i]!.p99 = Math.max(acc[i]!.p99, f.p99);
    }
  }
  return acc.map((a) => ({ rps: a.requests / seconds, p99: a.p99, cpuUs: (a.cpu * 1e6) / a.requests }));
}

/**
 * Starts the service process over the bench's store and the bare peer with our answers, and
 * measures the floor, the sorted pages and the throughput by id.
 */
export async function serviceRows(
  bench: BenchServer,
  size: number,
  options: {
    requests: number;
    seconds: number;
    throughputSeconds: number;
    /** Only the request by id (the sorted pages' peer) and the sorted pages. */
    sortedOnly?: boolean;
    /** Only the request floor and the throughput by id (no sorted pages). */
    floorOnly?: boolean;
  },
): Promise<ServiceRows> {
  const { requests, seconds } = options;
  const sample = await bench.store.find('biosample_set', {}, { limit: 100, skip: Math.floor(size / 3) });
  const byId = sample.map((d) => `/nmdcschema/ids/${encodeURIComponent(d.id)}`);
  const listIds = '/nmdcschema/biosample_set?filter=%7B%7D&max_page_size=25&projection=id';
  const listFull = '/nmdcschema/biosample_set?filter=%7B%7D&max_page_size=25';
  console.error('  starting the service process (NODE_ENV=production) and bare node:http ...');
  const ours = await startServerProcess(bench.dataDir, 1, {
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    // An administrator renames records between sorted pages (the first page after a write).
    ADMIN_USERNAME: BENCH_ADMIN.username,
    ADMIN_PASSWORD: BENCH_ADMIN.password,
  });
  let bare: BareServer | undefined;
  try {
    const bodies = new Map<string, string>();
    for (const p of ['/version', ...byId, listIds, listFull])
      bodies.set(p, (await timedGet(ours.url + p)).body);
    bare = await startBareServer(bodies);

    const floor: Row[] = [];
    const floorRow = async (label: string, paths: string[], target: number) => {
      const t = await sideBySide(ours, bare!, paths, requests, seconds);
      const o = percentile(t.ours.times, 50);
      const b = percentile(t.bare.times, 50);
      const row: Row = {
        measure: label,
        bytes: bodies.get(paths[0]!)!.length,
        'ours p50 ms': ms(o),
        'bare p50 ms': ms(b),
        'p50 ours/bare': ratio(o, b),
        'ours CPU us/req': Math.round(t.ours.cpuUs),
        'bare CPU us/req': Math.round(t.bare.cpuUs),
        'CPU ours/bare': ratio(t.ours.cpuUs, t.bare.cpuUs),
        target: `p50 <= ${target}x`,
        runs: `${t.ours.times.length}/${t.bare.times.length}`,
      };
      console.error(row);
      floor.push(row);
      summarize({
        measure: `${label}, p50`,
        size,
        ours: o,
        peer: b,
        unit: 'ms',
        limit: target,
        target: `<= ${target}x bare`,
        peerLabel: 'bare node:http',
      });
      return o;
    };
    if (options.sortedOnly) {
      const byIdP50 = await floorRow('GET /nmdcschema/ids/{id} (100 ids)', byId, 3);
      return { floor, sorted: await sortedRows(ours, size, byIdP50, requests, seconds) };
    }
    await floorRow('GET /version', ['/version'], 3);
    const byIdP50 = await floorRow('GET /nmdcschema/ids/{id} (100 ids)', byId, 3);
    await floorRow('listing, 25 ids (filter {}, projection=id)', [listIds], 4);
    await floorRow('listing, 25 records (filter {})', [listFull], 4);

    // Throughput by id: 10 keep-alive connections from this process, the two servers in turns.
    const [tOurs, tBare] = (await alternatingThroughput([ours, bare], byId, options.throughputSeconds)) as [
      Throughput,
      Throughput,
    ];
    const tRow: Row = {
      measure: 'throughput by id, 10 connections (req/s)',
      bytes: bodies.get(byId[0]!)!.length,
      'ours p50 ms': `${Math.round(tOurs.rps)} req/s (p99 ${tOurs.p99} ms)`,
      'bare p50 ms': `${Math.round(tBare.rps)} req/s (p99 ${tBare.p99} ms)`,
      'p50 ours/bare': `${(tBare.rps / tOurs.rps).toFixed(1)}x fewer`,
      'ours CPU us/req': Math.round(tOurs.cpuUs),
      'bare CPU us/req': Math.round(tBare.cpuUs),
      'CPU ours/bare': ratio(tOurs.cpuUs, tBare.cpuUs),
      target: 'req/s within 4x',
      runs: `${options.throughputSeconds} s each, alternating`,
    };
    console.error(tRow);
    floor.push(tRow);
    summarize({
      measure: 'throughput by id, 10 connections',
      size,
      ours: tOurs.rps,
      peer: tBare.rps,
      unit: 'req/s',
      limit: 4,
      target: 'within 4x of bare',
      higherIsBetter: true,
      peerLabel: 'bare node:http',
      digits: 0,
    });

    if (options.floorOnly) {
      floor.push(...(await fastAgainstFull(bench, ours, byId, requests, seconds, options.throughputSeconds)));
      return { floor, sorted: [] };
    }
    const sorted = await sortedRows(ours, size, byIdP50, requests, seconds);
    return { floor, sorted };
  } finally {
    await bare?.stop();
    await ours.stop();
  }
}

/**
 * The service's fast path for the hot GETs against its full chain: a second service process with
 * `FAST_PATH=false` over the same store, measured side by side with the first (alternating rounds,
 * so that a change in the machine's load shows in both): a request by id sequentially, and the
 * throughput by id with 10 connections, each with the server's CPU per request.
 */
async function fastAgainstFull(
  bench: BenchServer,
  ours: ServerProcess,
  byId: string[],
  requests: number,
  seconds: number,
  throughputSeconds: number,
): Promise<Row[]> {
  console.error('  starting a second service process with FAST_PATH=false ...');
  const full = await startServerProcess(bench.dataDir, 1, {
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    FAST_PATH: 'false',
  });
  try {
    const sequential = await sideBySide(ours, full, byId, requests, seconds);
    const [tOurs, tFull] = (await alternatingThroughput([ours, full], byId, throughputSeconds)) as [
      Throughput,
      Throughput,
    ];
    const oursP50 = percentile(sequential.ours.times, 50);
    const fullP50 = percentile(sequential.bare.times, 50);
    const rows: Row[] = [
      {
        measure: 'GET /nmdcschema/ids/{id}: fast path / full chain (FAST_PATH=false)',
        bytes: '-',
        'ours p50 ms': ms(oursP50),
        'bare p50 ms': `full chain: ${ms(fullP50)}`,
        'p50 ours/bare': ratio(oursP50, fullP50),
        'ours CPU us/req': Math.round(sequential.ours.cpuUs),
        'bare CPU us/req': `full chain: ${Math.round(sequential.bare.cpuUs)}`,
        'CPU ours/bare': ratio(sequential.ours.cpuUs, sequential.bare.cpuUs),
        target: '-',
        runs: `${sequential.ours.times.length}/${sequential.bare.times.length}`,
      },
      {
        measure: 'throughput by id: fast path / full chain (FAST_PATH=false), alternating',
        bytes: '-',
        'ours p50 ms': `${Math.round(tOurs.rps)} req/s`,
        'bare p50 ms': `full chain: ${Math.round(tFull.rps)} req/s`,
        'p50 ours/bare': `${(tOurs.rps / tFull.rps).toFixed(1)}x more`,
        'ours CPU us/req': Math.round(tOurs.cpuUs),
        'bare CPU us/req': `full chain: ${Math.round(tFull.cpuUs)}`,
        'CPU ours/bare': ratio(tOurs.cpuUs, tFull.cpuUs),
        target: '-',
        runs: `${throughputSeconds} s each, alternating`,
      },
    ];
    for (const row of rows) console.error(row);
    return rows;
  } finally {
    await full.stop();
  }
}

/** Sorted listings through the compact endpoint: the first and the deepest page, and a cursor's pages. */
async function sortedRows(
  ours: ServerProcess,
  size: number,
  byIdP50: number,
  requests: number,
  seconds: number,
): Promise<Row[]> {
  /** Page 1 against a request by id, the deep page against page 1 (`stat`: what the figures are). */
  const pages = (measure: string, first: number, deep: number, stat = ' p50') => {
    summarize({
      measure: `${measure}, first page${stat}`,
      size,
      ours: first,
      peer: byIdP50,
      unit: 'ms',
      limit: 10,
      target: '<= 10x by id',
      peerLabel: 'by id',
    });
    summarize({
      measure: `${measure}, deep page${stat}`,
      size,
      ours: deep,
      peer: first,
      unit: 'ms',
      limit: 2,
      target: '<= 2x first page',
      peerLabel: 'first page',
    });
  };
  const rows: Row[] = [];
  const rename = renamer(ours.url);
  const cases: Array<{ label: string; query: string }> = [
    { label: 'sort=name', query: 'sort=name' },
    { label: 'sort=name:desc', query: 'sort=name:desc' },
    {
      label: 'filter=ecosystem_category:Terrestrial, sort=name',
      query: `filter=${encodeURIComponent('ecosystem_category:Terrestrial')}&sort=name`,
    },
    { label: 'sort=ecosystem_category:desc', query: 'sort=ecosystem_category:desc' },
    { label: 'sort=collection_date.has_raw_value', query: 'sort=collection_date.has_raw_value' },
  ];
  for (const c of cases) {
    const path = (page: number) => `/biosamples?${c.query}&per_page=25&page=${page}`;
    // The first time each page is asked for in this process, before anything is kept for it.
    const cold = [(await timedGet(ours.url + path(1))).ms, (await timedGet(ours.url + path(401))).ms];
    const first = await timeSequential(ours.url, [path(1)], requests, seconds, () => ours.cpu());
    const deep = await timeSequential(ours.url, [path(401)], requests, seconds, () => ours.cpu());
    const p1 = percentile(first.times, 50);
    const p401 = percentile(deep.times, 50);
    // One record of page 1 renamed (it stays on the page), then each page asked once again.
    const shown = (JSON.parse((await timedGet(ours.url + path(1))).body) as { results: Doc[] }).results[5]!;
    await rename(String(shown.id), `${String(shown.name ?? '')} (renamed)`);
    const written = [(await timedGet(ours.url + path(1))).ms, (await timedGet(ours.url + path(401))).ms];
    // Named back, so a store served again (`--data-dir`) still holds what PostgreSQL loads.
    if (typeof shown.name === 'string') await rename(String(shown.id), shown.name);
    const row: Row = {
      listing: c.label,
      'page 1 p50 ms': ms(p1),
      'page 401 p50 ms': ms(p401),
      'by id p50 ms': ms(byIdP50),
      'page 1 / by id': ratio(p1, byIdP50),
      'page 401 / page 1': ratio(p401, p1),
      'first asked p1/p401 ms': cold.map(ms).join('/'),
      'after a write p1/p401 ms': written.map(ms).join('/'),
      'CPU us/req p1/p401': `${Math.round(first.cpuUs)}/${Math.round(deep.cpuUs)}`,
      targets: '<= 10x, <= 2x',
      runs: `${first.times.length}/${deep.times.length}`,
    };
    console.error(row);
    rows.push(row);
    pages(`/biosamples?${c.query}, page 1 / 401`, p1, p401);
    pages(`/biosamples?${c.query}, page 1 / 401, first asked`, cold[0]!, cold[1]!, '');
    pages(`/biosamples?${c.query}, page 1 / 401, first after a write`, written[0]!, written[1]!, '');
  }
  // A cursor through the first 10,000 matches in name order, page by page.
  for (const c of cases.filter((k) => k.query.endsWith('sort=name'))) {
    const times: number[] = [];
    let cursor = '*';
    const c0 = ours.cpu();
    for (let page = 0; page < 400 && cursor; page++) {
      const t = await timedGet(
        `${ours.url}/biosamples?${c.query}&per_page=25&cursor=${encodeURIComponent(cursor)}`,
      );
      times.push(t.ms);
      cursor = (JSON.parse(t.body) as { meta: { next_cursor: string | null } }).meta.next_cursor ?? '';
    }
    const cpuUs = ((ours.cpu() - c0) * 1e6) / times.length;
    const firstPages = percentile(times.slice(0, 50), 50);
    const lastPages = percentile(times.slice(-50), 50);
    const label = `${c.label}, cursor pages 1-50 / ${times.length - 49}-${times.length}`;
    const row: Row = {
      listing: label,
      'page 1 p50 ms': ms(firstPages),
      'page 401 p50 ms': ms(lastPages),
      'by id p50 ms': ms(byIdP50),
      'page 1 / by id': ratio(firstPages, byIdP50),
      'page 401 / page 1': ratio(lastPages, firstPages),
      'first asked p1/p401 ms': `${ms(times[0]!)}/${ms(times[times.length - 1]!)}`,
      'after a write p1/p401 ms': '-',
      'CPU us/req p1/p401': `${Math.round(cpuUs)} (all pages)`,
      targets: '<= 10x, <= 2x',
      runs: `${times.length} pages`,
    };
    console.error(row);
    rows.push(row);
    pages(
      `/biosamples?${c.query}, cursor pages 1-50 / ${times.length - 49}-${times.length}`,
      firstPages,
      lastPages,
    );
  }
  return rows;
}
