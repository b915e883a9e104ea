/**
 * Shared set-up of the benchmarks: a fresh embedded store filled with generated records, the app
 * listening on 127.0.0.1, and small measuring tools.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino } from 'pino';
import autocannon from 'autocannon';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { BULK_BATCH, isBulkLoadable, SqliteBulkLoad } from '../../src/store/sqlite/bulk-load.ts';
import { rebuildEach } from '../../search/maintenance.ts';
import { buildApp } from '../../src/app.ts';
import { openServices } from '../../src/services.ts';
import { offloadLargeWrites } from '../../src/adapters.ts';
import { generateRecords, type GenerateOptions } from '../../src/data/generator.ts';
import type { Doc, DocumentStore } from '../../src/store/port.ts';
import type { SearchIndex } from '../../search/port.ts';
import type { EdgeIndex } from '../../src/provenance/port.ts';
import { startServerProcess, type Memory } from './server-process.ts';

export interface BenchServer {
  url: string;
  /** The data folder of the store (another server process may serve it too). */
  dataDir: string;
  store: DocumentStore;
  searchIndex: SearchIndex;
  edgeIndex: EdgeIndex;
  /** With `edges: 'after'`: seconds to build the edge index from the loaded store. */
  edgeBuildSeconds?: number;
  loadSeconds: number;
  records: number;
  /** With `workers`: resident memory of the server processes, MiB. */
  memory?: () => Memory;
  close(): Promise<void>;
}

export function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/**
 * The configuration of a bench's service over a fresh temporary data folder (or `existing`): no
 * demo data, quiet, on loopback, and as deployed (answers are not checked against the contract on
 * the way out).
 */
export function benchConfig(prefix: string, extra: Record<string, string> = {}, existing?: string) {
  const dataDir = existing ?? fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const config = loadConfig({
    DATA_DIR: dataDir,
    DEMO_DATA: 'false',
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
    ...extra,
  });
  return { dataDir, config };
}

/**
 * Loads generated records into a fresh embedded store and serves it: in this process, or, with
 * `workers`, from a separate server process (a cluster when more than one) over the same file,
 * so a load generator in this process does not share the server's event loop.
 */
export async function startBenchServer(
  options: GenerateOptions,
  serving: {
    workers?: number;
    /** When the edge index is attached: before the load (written with the records, the default) or after it (built from the store, timed as `edgeBuildSeconds`). */
    edges?: 'during' | 'after';
    /**
     * How records are written: `bulk` (the default; records first, then every index built in one
     * pass, src/store/sqlite/bulk-load.ts) or `transactional` (upserts with the indexes written
     * row by row in each transaction, the path of small loads), to compare the two.
     */
    load?: 'bulk' | 'transactional';
    /** More settings of the in-process server (an administrator, limits). */
    env?: Record<string, string>;
    /**
     * A data folder already loaded (by an earlier run with the same options): served as it is,
     * nothing is loaded (`loadSeconds` is NaN, `records` counts the store's), and it is kept on close.
     */
    reuse?: string;
  } = {},
): Promise<BenchServer> {
  const { dataDir, config } = benchConfig('nmdc-bench-', serving.env, serving.reuse);
  const logger = pino({ level: 'silent' });
  const store = await openStore(config, logger);
  const searchIndex = await openSearchIndex(config, store, logger);
  // Attached before the load, the edges are written with the records (and timed with them).
  let edgeIndex = serving.edges === 'after' ? undefined : await openEdgeIndex(config, store, logger);
  const started = performance.now();
  let records = 0;
  const batch = new Map<string, Doc[]>();
  const bulk =
    serving.load !== 'transactional' && isBulkLoadable(store) ? new SqliteBulkLoad(store) : undefined;
  const batchSize = bulk ? BULK_BATCH : 2000;
  const flush = async (collection: string) => {
    const docs = batch.get(collection) ?? [];
    if (!docs.length) return;
    if (bulk) bulk.write(collection, docs);
    else {
      await store.upsertMany(collection, docs);
      await searchIndex.index(collection, docs);
    }
    records += docs.length;
    batch.set(collection, []);
    if (records % 100_000 < docs.length) process.stderr.write(`  loaded ${records} records\n`);
  };
  for (const { collection, doc } of serving.reuse ? [] : generateRecords(options)) {
    const docs = batch.get(collection) ?? [];
    docs.push(doc);
    batch.set(collection, docs);
    if (docs.length >= batchSize) await flush(collection);
  }
  for (const c of batch.keys()) await flush(c);
  await bulk?.finish(rebuildEach(store, [searchIndex, edgeIndex]));
  const loadSeconds = serving.reuse ? NaN : (performance.now() - started) / 1000;
  if (serving.reuse) records = await store.count('biosample_set', {});
  const buildStarted = performance.now();
  edgeIndex ??= await openEdgeIndex(config, store, logger);
  const edgeBuildSeconds = serving.edges === 'after' ? (performance.now() - buildStarted) / 1000 : undefined;
  const common = { dataDir, store, searchIndex, edgeIndex, loadSeconds, edgeBuildSeconds, records };
  const cleanUp = async () => {
    await searchIndex.close();
    await store.close();
    if (!serving.reuse) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  if (serving.workers !== undefined) {
    const child = await startServerProcess(dataDir, serving.workers);
    return {
      ...common,
      url: child.url,
      memory: () => child.memory(),
      close: async () => {
        await child.stop();
        await cleanUp();
      },
    };
  }
  // As the service opens them: large writes on the writing thread (unless WRITE_THREAD=false).
  offloadLargeWrites(config, { store, searchIndex, edgeIndex });
  const services = await openServices(config, logger, { adapters: { store, searchIndex, edgeIndex } });
  const app = buildApp(services);
  services.start();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  // As in main.ts: idle keep-alive sockets outlive a long full-scan step, so the client never
  // reuses one the server has just closed.
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  return {
    ...common,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await services.stop();
      await cleanUp();
    },
  };
}

export interface LoadFigures {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
  non2xx: number;
}

/** Drives `paths` (rotating) for `seconds` with `connections` keep-alive connections. */
export async function hammer(
  url: string,
  paths: string[],
  seconds: number,
  connections = 10,
): Promise<LoadFigures> {
  let i = 0;
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [{ setupRequest: (req: any) => ({ ...req, path: paths[i++ % paths.length] }) }],
  });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: result.requests.average,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/**
 * Times `run` sequentially, in ms: `count` runs, or as many as fit in `seconds` (at least 10), so a
 * slow case does not hold a benchmark for minutes.
 */
export async function timedRuns(
  count: number,
  seconds: number,
  run: (i: number) => Promise<void>,
): Promise<number[]> {
  const out: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  for (let i = 0; i < count && (i < 10 || performance.now() < deadline); i++) {
    const t0 = performance.now();
    await run(i);
    out.push(performance.now() - t0);
  }
  return out;
}

/** Sequential timings of one request each, in ms. */
export async function timeEach(urls: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const u of urls) {
    const t0 = performance.now();
    const res = await fetch(u);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${u} -> ${res.status}`);
    out.push(performance.now() - t0);
  }
  return out;
}

/** An access token for a user, by the password grant of `POST /token` on the service at `url`. */
export async function passwordToken(
  url: string,
  user: { username: string; password: string },
): Promise<string> {
  const res = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', ...user }),
  });
  if (!res.ok) throw new Error(`POST /token -> ${res.status} ${(await res.text()).slice(0, 300)}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export function table(rows: Array<Record<string, string | number>>): string {
  const headers = Object.keys(rows[0] ?? {});
  const widths = headers.map((h) => Math.max(h.length, ...rows.map((r) => String(r[h]).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    line(headers),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(headers.map((h) => String(r[h])))),
  ].join('\n');
}
