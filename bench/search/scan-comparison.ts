/**
 * The search bench's `--with-scan` part: the same store answered by a second app whose search
 * index never narrows (every query a scan of the source of truth), and the search index's
 * rebuild rates (verify only, every row lost, from an empty file).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { buildApp } from '../../src/app.ts';
import { openServices } from '../../src/services.ts';
import type { DocumentStore, Filter } from '../../src/store/port.ts';
import type { Candidates, SearchIndex } from '../../search/port.ts';
import { reindexCollection, type ReindexResult } from '../../search/maintenance.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { percentile, timedRuns, type BenchServer } from '../support/embedded.ts';
import { COLLECTION as C, pagePath } from './shapes.ts';

type Row = Record<string, string | number>;

/** An index that never narrows: every query is a scan of the source of truth. */
class ScanOnlyIndex implements SearchIndex {
  readonly engine = 'sqlite-fts5' as const;
  readonly synchronous = true;
  async index(): Promise<void> {}
  async remove(): Promise<void> {}
  async candidates(): Promise<Candidates> {
    return { all: true };
  }
  async clear(): Promise<void> {}
  async *fingerprints(): AsyncIterable<Array<{ id: string; fingerprint: string }>> {}
  async watermark(): Promise<number> {
    return 0;
  }
  async setWatermark(): Promise<void> {}
  async close(): Promise<void> {}
}

interface Scenario {
  name: string;
  /** Request paths, rotated. */
  paths: string[];
}

const enc = encodeURIComponent;
const search = (attr: string, text: string) =>
  `/biosamples?filter=${enc(`${attr}.search:${text}`)}&per_page=25`;
const regex = (filter: Filter) => pagePath(filter);

function scenarios(size: number, sampleNames: string[], sampNames: string[], goldIds: string[]): Scenario[] {
  const pick = (xs: string[], n: number) =>
    Array.from({ length: n }, (_, i) => xs[Math.floor((i * xs.length) / n)]!);
  return [
    {
      name: 'selective .search (name, ~1 hit)',
      paths: pick(sampleNames, 20).map((n) => search('name', n.split(' ').slice(1, 4).join(' '))),
    },
    {
      name: 'selective $regex (^gold id prefix)',
      paths: pick(goldIds, 20).map((g) =>
        regex({ alternative_identifiers: { $regex: `^${g.slice(0, -1)}` } }),
      ),
    },
    {
      name: 'selective $regex, i + alternation',
      paths: pick(sampNames, 20).map((n, i, all) =>
        regex({ samp_name: { $regex: `^(${n}|${all[(i + 1) % all.length]!})$`, $options: 'i' } }),
      ),
    },
    {
      name: 'unselective .search (geo_loc_name, a site)',
      paths: ['kellogg', 'columbia', 'harvard', 'yellowstone'].map((t) =>
        search('geo_loc_name.has_raw_value', t),
      ),
    },
    {
      name: 'unselective $regex (biome$, most records)',
      paths: [regex({ 'env_broad_scale.term.name': { $regex: 'biome$' } })],
    },
  ].map((s) => ({ ...s, name: `${s.name} @${size.toLocaleString('en-US')}` }));
}

async function listen(app: import('express').Express): Promise<{ url: string; server: Server }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** Sequential requests rotating over `paths`: `count`, or as many as fit in `seconds` (at least 10). */
export async function timedRequests(
  url: string,
  paths: string[],
  count: number,
  seconds = Infinity,
): Promise<number[]> {
  return timedRuns(count, seconds, async (i) => {
    const res = await fetch(url + paths[i % paths.length]);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${paths[i % paths.length]} -> ${res.status}`);
  });
}

/**
 * Builds the collection's index from nothing in a file of its own: every string is new and
 * tokenized (a rebuild in place keeps the strings it already has).
 */
async function buildFromEmpty(store: DocumentStore): Promise<ReindexResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-index-'));
  const db = new Database(path.join(dir, 'index.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536'); // 64 MiB page cache, as the embedded store's
  const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true });
  try {
    return await reindexCollection(store, index, C);
  } finally {
    await index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Rebuild rates of the loaded index (it is left exact afterwards). */
export async function rebuildRow(bench: BenchServer, size: number): Promise<Row> {
  const fts = bench.searchIndex as FtsSearchIndex;
  // A rebuild of an exact index (it verifies every row and writes none), then one that must
  // write every row again (the map emptied, records and strings kept).
  const rebuilt = await reindexCollection(bench.store, fts, C);
  fts.db.exec('DELETE FROM search_values');
  const repaired = await reindexCollection(bench.store, fts, C);
  const fresh = await buildFromEmpty(bench.store);
  const rate = (r: { records: number; seconds: number }) =>
    Math.round(r.records / r.seconds).toLocaleString('en-US');
  return {
    biosamples: size.toLocaleString('en-US'),
    'index rebuild rec/s': rate(rebuilt),
    'rebuild, all rows lost rec/s': rate(repaired),
    'index build from empty rec/s': rate(fresh),
  };
}

/** Indexed vs scan-only p50/p99 of the older scenarios, on the same store in the same run. */
export async function scanRows(
  bench: BenchServer,
  size: number,
  requests: number,
  scanSeconds: number,
): Promise<Row[]> {
  const sample = await bench.store.find(C, {}, { limit: 2000, skip: Math.floor(size / 4) });
  const names = sample.map((d) => String(d.name));
  const sampNames = sample.map((d) => String(d.samp_name));
  const gold = sample.flatMap((d) =>
    (d.alternative_identifiers as string[]).filter((a) => a.startsWith('gold:')),
  );
  const config = loadConfig({
    DATA_DIR: '/nonexistent',
    DEMO_DATA: 'false',
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
  });
  const scanServices = await openServices(config, pino({ level: 'silent' }), {
    adapters: { store: bench.store, searchIndex: new ScanOnlyIndex(), edgeIndex: bench.edgeIndex },
  });
  const scan = await listen(buildApp(scanServices));
  const rows: Row[] = [];
  try {
    for (const s of scenarios(size, names, sampNames, gold)) {
      await timedRequests(bench.url, s.paths, Math.min(20, requests), 5); // warm-up
      const indexed = await timedRequests(bench.url, s.paths, requests, 30);
      const scanned = await timedRequests(scan.url, s.paths, requests, scanSeconds);
      const p50 = percentile(indexed, 50);
      const scanP50 = percentile(scanned, 50);
      rows.push({
        scenario: s.name,
        'p50 ms': p50.toFixed(1),
        'p99 ms': percentile(indexed, 99).toFixed(1),
        'scan p50 ms': scanP50.toFixed(1),
        'scan p99 ms': percentile(scanned, 99).toFixed(1),
        speed_up: `${(scanP50 / p50).toFixed(0)}x`,
      });
      console.error(rows[rows.length - 1]);
    }
  } finally {
    scan.server.closeAllConnections();
    await new Promise((r) => scan.server.close(r));
    await scanServices.stop();
  }
  return rows;
}
