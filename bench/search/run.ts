/**
 * Search benchmark on the embedded default: selective and unselective `.search` and `$regex`
 * queries through HTTP on 127.0.0.1, answered with the FTS5 index and, in the same run, by a
 * second app on the same store whose index never narrows (a full scan of the source of truth).
 * Reports p50/p99, candidates per hit, index build rate and index size.
 *
 *   npm run bench:search -- [--sizes 10000,100000,1000000] [--requests 200] [--scan-seconds 10]
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
import type { DocumentStore, Filter } from '../../src/store/port.ts';
import type { Candidates, SearchIndex } from '../../search/port.ts';
import { QueryPlanner } from '../../search/planner.ts';
import { reindexCollection, type ReindexResult } from '../../search/maintenance.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { flag, percentile, startBenchServer, table } from '../support/embedded.ts';

const C = 'biosample_set';

function listFlag(name: string, fallback: number[]): number[] {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]!.split(',').map(Number) : fallback;
}

const sizes = listFlag('sizes', [10_000, 100_000]);
const requests = flag('requests', 200);
const scanSeconds = flag('scan-seconds', 10);

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
  /** Request paths (rotated) and the filter each one runs. */
  variants: Array<{ path: string; filter: Filter }>;
}

const enc = encodeURIComponent;
const search = (attr: string, text: string) => ({
  path: `/biosamples?filter=${enc(`${attr}.search:${text}`)}&per_page=25`,
  filter: { [attr]: { $regex: text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), $options: 'i' } },
});
const regex = (filter: Filter) => ({
  path: `/nmdcschema/${C}?filter=${enc(JSON.stringify(filter))}&max_page_size=25`,
  filter,
});

function scenarios(size: number, sampleNames: string[], sampNames: string[], goldIds: string[]): Scenario[] {
  const pick = (xs: string[], n: number) =>
    Array.from({ length: n }, (_, i) => xs[Math.floor((i * xs.length) / n)]!);
  return [
    {
      name: 'selective .search (name, ~1 hit)',
      variants: pick(sampleNames, 20).map((n) => search('name', n.split(' ').slice(1, 4).join(' '))),
    },
    {
      name: 'selective $regex (^gold id prefix)',
      variants: pick(goldIds, 20).map((g) =>
        regex({ alternative_identifiers: { $regex: `^${g.slice(0, -1)}` } }),
      ),
    },
    {
      name: 'selective $regex, i + alternation',
      variants: pick(sampNames, 20).map((n, i, all) =>
        regex({ samp_name: { $regex: `^(${n}|${all[(i + 1) % all.length]!})$`, $options: 'i' } }),
      ),
    },
    {
      name: 'unselective .search (geo_loc_name, a site)',
      variants: ['kellogg', 'columbia', 'harvard', 'yellowstone'].map((t) =>
        search('geo_loc_name.has_raw_value', t),
      ),
    },
    {
      name: 'unselective $regex (biome$, most records)',
      variants: [regex({ 'env_broad_scale.term.name': { $regex: 'biome$' } })],
    },
  ].map((s) => ({ ...s, name: `${s.name} @${size.toLocaleString('en-US')}` }));
}

async function listen(app: import('express').Express): Promise<{ url: string; server: Server }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** Sequential requests rotating over the variants, for at most `count` requests or `seconds`. */
async function timed(url: string, paths: string[], count: number, seconds: number): Promise<number[]> {
  const out: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  for (let i = 0; i < count && (i < 3 || performance.now() < deadline); i++) {
    const t0 = performance.now();
    const res = await fetch(url + paths[i % paths.length]);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${paths[i % paths.length]} -> ${res.status}`);
    out.push(performance.now() - t0);
  }
  return out;
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

async function main() {
  const rows: Array<Record<string, string | number>> = [];
  const buildRows: Array<Record<string, string | number>> = [];
  for (const size of sizes) {
    console.error(`loading ${size.toLocaleString('en-US')} biosamples ...`);
    const bench = await startBenchServer({ studies: 10, biosamples: size, dataObjects: 0, seed: 7 });
    try {
      const fts = bench.searchIndex as FtsSearchIndex;
      // A rebuild of an exact index (it verifies every row and writes none), then one that must
      // write every row again (the map emptied, records and strings kept).
      const rebuilt = await reindexCollection(bench.store, fts, C);
      fts.db.exec('DELETE FROM search_values');
      const repaired = await reindexCollection(bench.store, fts, C);
      const fresh = await buildFromEmpty(bench.store);
      const rate = (r: { records: number; seconds: number }) =>
        Math.round(r.records / r.seconds).toLocaleString('en-US');
      buildRows.push({
        biosamples: size.toLocaleString('en-US'),
        'load (store + index) rec/s': Math.round(bench.records / bench.loadSeconds).toLocaleString('en-US'),
        'index rebuild rec/s': rate(rebuilt),
        'rebuild, all rows lost rec/s': rate(repaired),
        'index build from empty rec/s': rate(fresh),
        'index size MiB': (fts.sizeBytes() / 2 ** 20).toFixed(1),
        'index bytes/record': Math.round(fts.sizeBytes() / size),
      });

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
      const logger = pino({ level: 'silent' });
      const scanApp = await buildApp({
        config,
        store: bench.store,
        searchIndex: new ScanOnlyIndex(),
        edgeIndex: bench.edgeIndex,
        logger,
      });
      const scan = await listen(scanApp.app);
      const planner = new QueryPlanner(bench.store, bench.searchIndex);
      try {
        for (const s of scenarios(size, names, sampNames, gold)) {
          const paths = s.variants.map((v) => v.path);
          await timed(bench.url, paths, Math.min(20, requests), 5); // warm-up
          const indexed = await timed(bench.url, paths, requests, 30);
          const scanned = await timed(scan.url, paths, requests, scanSeconds);
          let candidates = 0;
          let hits = 0;
          let narrowed = 0;
          for (const v of s.variants) {
            const plan = await planner.plan(C, v.filter);
            // Exact (verified on the candidates; the differential test holds it equal to a scan).
            const n = await planner.count(C, v.filter);
            hits += n;
            if (plan.candidates) {
              candidates += plan.candidates.size;
              narrowed++;
            } else candidates += size;
          }
          const p50 = percentile(indexed, 50);
          const scanP50 = percentile(scanned, 50);
          rows.push({
            scenario: s.name,
            'hits/query': Math.round(hits / s.variants.length),
            narrowed: `${narrowed}/${s.variants.length}`,
            'candidates/hit': hits ? (candidates / hits).toFixed(2) : '-',
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
        await scanApp.close();
      }
    } finally {
      await bench.close();
    }
  }
  console.log('\nIndex build (embedded FTS5, biosample_set)\n');
  console.log(table(buildRows));
  console.log(
    '\nQueries through HTTP, sequential, page of 25 (indexed vs full scan, same store, same run)\n',
  );
  console.log(table(rows));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
