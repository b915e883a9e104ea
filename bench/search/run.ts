/**
 * Search benchmark, side by side with PostgreSQL: the generator's biosamples are loaded into a
 * fresh embedded store (every index) and, when PostgreSQL with pg_trgm is installed, into a
 * private PostgreSQL cluster (COPY, then a trigram GIN index per queried path, ANALYZE). For every
 * query shape of issue 16 it prints, per size: our p50/p99 for the first page of 25 by id through
 * HTTP on 127.0.0.1, our floor (the same request with filter `{}`, alternating with the shape's
 * requests so that both meet the same load on the machine), PostgreSQL's p50/p99 for the
 * same page as a prepared statement over its wire protocol, and `(ours - floor) / PostgreSQL`;
 * then a compact find with a large `meta.count` (first request and p50 after it) against
 * PostgreSQL's `count(*)`, and the load rates and index sizes of both. Both sides must return the
 * same ids for every shape, or the run stops. Without PostgreSQL it says so and measures our side.
 * Around the query (service.ts): the request floor of the service in its own process against bare
 * `node:http` answering the same bytes, throughput by id, sorted pages (first, deepest, cursor);
 * then a submit of `--submit` biosamples to a fresh store (the service in a process of its own).
 * Every figure a target names is printed first in one table, under the command line.
 *
 *   npm run bench:search -- [--sizes 100000,1000000] [--requests 200] [--seconds 30] [--without-postgres]
 *                           [--submit 100000] [--throughput-seconds 10]
 *                           [--with-scan [--scan-seconds 10]] [--only sorted|count|shapes|floor]
 *                           [--data-dir <folder>]
 *
 * Each p50/p99 is over `--requests` sequential requests, or as many as fit in `--seconds` (at least
 * 10). `--with-scan` adds the older comparisons: the same queries on a scan-only app, and the search
 * index's rebuild rates. `--only sorted` loads our store and measures the sorted pages alone (with the
 * request by id they are compared to), without PostgreSQL. `--only count` measures the load and the
 * first count alone (no page shapes, request floor, sorted pages or submit). `--only shapes` measures the
 * load and the page shapes beside their floor and PostgreSQL (no count, request floor, sorted pages,
 * throughput or submit). `--only floor` measures the request floor and the throughput by id alone
 * (no PostgreSQL, page shapes, sorted pages or submit), and the service's fast path against its full
 * chain (a second process, FAST_PATH=false). `--data-dir` serves a folder an earlier run loaded with
 * the same options (one size; the load is not measured again, and the folder is kept): a 10^6 load
 * takes minutes. PostgreSQL's binaries are looked up in PG_BINDIR, /usr/lib/postgresql/<v>/bin
 * and `pg_config --bindir`; as root the cluster runs as the `postgres` user.
 */
import os from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { generateRecords, type GenerateOptions } from '../../src/data/generator.ts';
import type { Doc } from '../../src/store/port.ts';
import type { SqliteDocumentStore } from '../../src/store/sqlite/document-store.ts';
import type { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { flag, percentile, startBenchServer, table, type BenchServer } from '../support/embedded.ts';
import { findPostgres, startPostgres, type PostgresCluster } from '../support/postgres.ts';
import {
  loadPeer,
  peerCount,
  peerMatches,
  peerPageIds,
  timePeerCount,
  timePeerPage,
  type PeerLoad,
} from './peer.ts';
import { rebuildRow, scanRows, timedRequests } from './scan-comparison.ts';
import { serviceRows } from './service.ts';
import { summarize, summarizeAbsolute, summaryRows } from './summary.ts';
import { measureSubmit, type SubmitFigures } from '../support/submit.ts';
import {
  countPath,
  countShape,
  indexedPaths,
  pageFilter,
  pagePath,
  pageShapes,
  type PageShape,
} from './shapes.ts';

type Row = Record<string, string | number>;

function listFlag(name: string, fallback: number[]): number[] {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]!.split(',').map(Number) : fallback;
}

const sizes = listFlag('sizes', [100_000, 1_000_000]);
const requests = flag('requests', 200);
/** Per measurement: `requests`, or as many as fit in this many seconds (at least 10). */
const budget = flag('seconds', 30);
const scanSeconds = flag('scan-seconds', 10);
const withScan = process.argv.includes('--with-scan');
/**
 * `--only sorted`: the sorted listings and their peer (a request by id), nothing else; `--only count`:
 * the load and the first count; `--only shapes`: the load and the page shapes; `--only floor`: the
 * request floor and throughput by id.
 */
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const ONLY = ['sorted', 'count', 'shapes', 'floor'];
if (only !== undefined && !ONLY.includes(only))
  throw new Error(`--only ${only}: only ${ONLY.map((o) => `"${o}"`).join(', ')} are known`);
const sortedOnly = only === 'sorted';
const onlyCount = only === 'count';
const onlyShapes = only === 'shapes';
const floorOnly = only === 'floor';
const withoutPostgres = sortedOnly || floorOnly || process.argv.includes('--without-postgres');
/** Biosamples submitted through `POST /metadata/json:submit` on a fresh store (0: not measured). */
const submitSize = sortedOnly || onlyCount || onlyShapes || floorOnly ? 0 : flag('submit', 100_000);
/** Seconds of autocannon per side for the throughput by id. */
const throughputSeconds = flag('throughput-seconds', 10);
/** A data folder loaded by an earlier run, served instead of loading a fresh store (one size only). */
const reuseDir = process.argv.includes('--data-dir')
  ? process.argv[process.argv.indexOf('--data-dir') + 1]
  : undefined;
if (reuseDir !== undefined && sizes.length !== 1)
  throw new Error('--data-dir serves one size: give one --sizes');

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const perSecond = (records: number, seconds: number) => Math.round(records / seconds).toLocaleString('en-US');

/** Ids of our first page, and the match count when the response carries one. */
async function ourPage(url: string, path: string): Promise<{ ids: string[]; count?: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url + path);
  const body = (await res.json()) as {
    resources?: Array<{ id: string }>;
    results?: Array<{ id: string }>;
    meta?: { count: number };
  };
  const elapsed = performance.now() - t0;
  if (!res.ok) throw new Error(`${path} -> ${res.status} ${JSON.stringify(body)}`);
  return {
    ids: (body.resources ?? body.results ?? []).map((d) => d.id),
    count: body.meta?.count,
    ms: elapsed,
  };
}

/** A bench comparing different answers is wrong: stop. */
function assertSameIds(label: string, ours: string[], theirs: string[]): void {
  if (ours.length !== theirs.length || ours.some((id, i) => id !== theirs[i])) {
    throw new Error(
      `${label}: different first pages\n  ours:       ${ours.slice(0, 5).join(' ')} ... (${ours.length})\n` +
        `  PostgreSQL: ${theirs.slice(0, 5).join(' ')} ... (${theirs.length})`,
    );
  }
}

/** Bytes of our attribute index and records table (dbstat), when the store is the embedded one. */
function ourTableBytes(bench: BenchServer): { attribute: number; records: number } {
  const db = (bench.store as Partial<SqliteDocumentStore>).db;
  if (!db) return { attribute: NaN, records: NaN };
  const bytesOf = (tables: string[]) =>
    (
      db
        .prepare(
          `SELECT sum(pgsize) AS bytes FROM dbstat
            WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name IN (${tables.map(() => '?').join(',')}))`,
        )
        .get(...tables) as { bytes: number | null }
    ).bytes ?? 0;
  return {
    attribute: bytesOf(['attr_index', 'attr_irregular', 'attr_paths']),
    records: bytesOf(['docs']),
  };
}

/** Generated biosamples a served folder must hold as generated (`--data-dir`). */
const SAME_RECORDS_CHECKED = 100;

/**
 * Why a folder loaded before (`--data-dir`) cannot stand beside what this bench generates (and
 * loads into PostgreSQL): the first biosamples generated, missing or different there. Undefined
 * when they are all there as generated.
 */
async function otherRecords(bench: BenchServer, options: GenerateOptions): Promise<string | undefined> {
  const expected: Doc[] = [];
  for (const { collection, doc } of generateRecords(options)) {
    if (collection !== 'biosample_set') continue;
    expected.push(doc);
    if (expected.length === SAME_RECORDS_CHECKED) break;
  }
  const stored = await bench.store.find('biosample_set', { id: { $in: expected.map((d) => d.id) } });
  const byId = new Map(stored.map((d) => [String(d.id), d]));
  for (const doc of expected) {
    const found = byId.get(String(doc.id));
    if (!found) return `${String(doc.id)} is missing`;
    if (!isDeepStrictEqual(found, doc)) return `${String(doc.id)} differs`;
  }
  return undefined;
}

async function measureSize(size: number, cluster: PostgresCluster | undefined) {
  const options = { studies: 10, biosamples: size, dataObjects: 0, seed: 7 };
  console.error(
    reuseDir
      ? `serving ${reuseDir} (${size.toLocaleString('en-US')} biosamples loaded before) ...`
      : `loading ${size.toLocaleString('en-US')} biosamples into the embedded store ...`,
  );
  const bench = await startBenchServer(options, reuseDir ? { reuse: reuseDir } : {});
  if (reuseDir && bench.records !== size) {
    await bench.close();
    throw new Error(`--data-dir ${reuseDir} holds ${bench.records} biosamples, not ${size}`);
  }
  const other = reuseDir ? await otherRecords(bench, options) : undefined;
  if (other) {
    await bench.close();
    throw new Error(
      `--data-dir ${reuseDir} holds other biosamples than this bench generates (${other}): its answers ` +
        'would not match PostgreSQL, which is loaded with the generated ones. Load it again: run without --data-dir',
    );
  }
  const pageRows: Row[] = [];
  const extraRows: { rebuild?: Row; scan: Row[] } = { scan: [] };
  let peer: PeerLoad | undefined;
  try {
    const ourRate = reuseDir ? `- (${reuseDir}, loaded before)` : perSecond(bench.records, bench.loadSeconds);
    console.error(
      reuseDir
        ? `  ours: ${bench.records} records, loaded before`
        : `  ours: ${bench.records} records in ${bench.loadSeconds.toFixed(1)} s (${ourRate}/s)`,
    );
    if (sortedOnly || floorOnly) {
      const service = await serviceRows(bench, size, {
        requests,
        seconds: budget,
        throughputSeconds,
        sortedOnly,
        floorOnly,
      });
      return { pageRows, countRow: undefined, loadRow: undefined, service, ...extraRows };
    }
    if (cluster) {
      console.error(`loading ${size.toLocaleString('en-US')} biosamples into PostgreSQL ...`);
      peer = await loadPeer(cluster.client, options, indexedPaths(size));
      if (peer.records !== size) throw new Error(`PostgreSQL copied ${peer.records} rows, expected ${size}`);
      console.error(
        `  PostgreSQL: COPY ${peer.copySeconds.toFixed(1)} s, indexes ${peer.indexSeconds.toFixed(1)} s, ANALYZE ${peer.analyzeSeconds.toFixed(1)} s`,
      );
    }

    const countRow = onlyShapes ? undefined : await measureCount(bench, cluster, size);
    const service = onlyCount
      ? undefined
      : await measurePagesAndService(bench, cluster, size, pageRows, !onlyShapes);

    if (withScan) {
      extraRows.scan = await scanRows(bench, size, requests, scanSeconds);
      extraRows.rebuild = await rebuildRow(bench, size);
    }

    const fts = bench.searchIndex as Partial<FtsSearchIndex>;
    const searchBytes = fts.sizeBytes?.() ?? NaN;
    const ourTables = ourTableBytes(bench);
    if (!reuseDir)
      summarize({
        measure: 'load, store and every index',
        size,
        ours: size / bench.loadSeconds,
        peer: peer ? size / (peer.copySeconds + peer.indexSeconds) : NaN,
        unit: 'rec/s',
        limit: 1,
        target: '>= PostgreSQL',
        higherIsBetter: true,
        peerLabel: 'PostgreSQL COPY + indexes',
        digits: 0,
      });
    summarize({
      measure: 'index size (search + attribute)',
      size,
      ours: (searchBytes + ourTables.attribute) / 2 ** 20,
      peer: peer ? peer.indexBytes / 2 ** 20 : NaN,
      unit: 'MiB',
      limit: 3,
      target: '<= 3x PostgreSQL',
      peerLabel: 'PostgreSQL trigram + pkey',
      digits: 1,
    });
    const loadRow: Row = {
      biosamples: size.toLocaleString('en-US'),
      'ours rec/s (store + every index)': ourRate,
      'PG rec/s (COPY + indexes)': peer ? perSecond(size, peer.copySeconds + peer.indexSeconds) : '-',
      'PG COPY rec/s': peer ? perSecond(size, peer.copySeconds) : '-',
      'PG index build s': peer ? peer.indexSeconds.toFixed(1) : '-',
      'ours index MiB (search + attribute)': `${mib(searchBytes + ourTables.attribute)} (${mib(searchBytes)} + ${mib(ourTables.attribute)})`,
      'PG index MiB (trigram + pkey)': peer ? mib(peer.indexBytes) : '-',
      'ours records MiB': mib(ourTables.records),
      'PG table MiB': peer ? mib(peer.tableBytes) : '-',
    };
    return { pageRows, countRow, loadRow, service, ...extraRows };
  } finally {
    await bench.close();
  }
}

/**
 * The count shape first, while nothing has touched its path: the first count is cold. The
 * endpoint itself is warmed with a listing without a filter (its statistics count, no sample
 * drawn, nothing of the path read), as PostgreSQL's first count(*) meets a running server.
 */
async function measureCount(
  bench: BenchServer,
  cluster: PostgresCluster | undefined,
  size: number,
): Promise<Row> {
  await ourPage(bench.url, '/biosamples?per_page=25');
  const counted = countPath(countShape);
  const first = await ourPage(bench.url, counted);
  const after = await timedRequests(bench.url, [counted], requests, budget);
  let countRow: Row = {
    shape: `${countShape.label} (meta.count)`,
    matches: first.count ?? '-',
    'ours first ms': ms(first.ms),
    'ours p50 ms': ms(percentile(after, 50)),
    'ours p99 ms': ms(percentile(after, 99)),
    'PG first ms': '-',
    'PG p50 ms': '-',
    'runs ours/PG': `${after.length}/-`,
  };
  if (cluster) {
    const pgTimes = await timePeerCount(cluster.client, countShape, 'count_shape', requests, budget);
    const theirs = await peerCount(cluster.client, countShape);
    if (theirs.count !== first.count)
      throw new Error(`${countShape.label}: count ${first.count} vs PostgreSQL ${theirs.count}`);
    assertSameIds(countShape.label, first.ids, theirs.ids);
    countRow = {
      ...countRow,
      'PG first ms': ms(pgTimes.first),
      'PG p50 ms': ms(pgTimes.p50),
      'runs ours/PG': `${after.length}/${pgTimes.runs}`,
    };
  }
  console.error(countRow);
  summarizeAbsolute({
    measure: `first exact count, ${countShape.label} (${first.count} matches)`,
    size,
    ours: first.ms,
    unit: 'ms',
    limit: 100,
    peer: countRow['PG first ms'] === '-' ? '-' : `PostgreSQL count(*), first: ${countRow['PG first ms']} ms`,
  });

  return countRow;
}

/** The page shapes (into `pageRows`) and the figures around the query (service.ts). */
async function measurePagesAndService(
  bench: BenchServer,
  cluster: PostgresCluster | undefined,
  size: number,
  pageRows: Row[],
  aroundTheQuery = true,
) {
  const floorPath = pagePath({});
  const shapes = pageShapes(size);
  for (const [i, shape] of shapes.entries()) {
    pageRows.push(await measureShape(bench, cluster, shape, i, floorPath, size));
    console.error(pageRows[pageRows.length - 1]);
  }
  const floor = await timedRequests(bench.url, [floorPath], requests, budget);
  pageRows.push({
    shape: 'floor: the same page, filter {}',
    matches: size,
    'ours p50 ms': ms(percentile(floor, 50)),
    'ours p99 ms': ms(percentile(floor, 99)),
    'floor p50 ms': ms(percentile(floor, 50)),
    'PG p50 ms': '-',
    'PG p99 ms': '-',
    '(ours-floor)/PG': '-',
    'runs ours/PG': `${floor.length}/-`,
  });
  return aroundTheQuery
    ? serviceRows(bench, size, { requests, seconds: budget, throughputSeconds })
    : undefined;
}

async function measureShape(
  bench: BenchServer,
  cluster: PostgresCluster | undefined,
  shape: PageShape,
  index: number,
  floorPath: string,
  size: number,
): Promise<Row> {
  const path = pagePath(pageFilter(shape));
  const checked = await ourPage(bench.url, path);
  if (cluster) assertSameIds(shape.label, checked.ids, await peerPageIds(cluster.client, shape));
  await timedRequests(bench.url, [path], Math.min(20, requests)); // warm-up
  // The floor's requests alternate with the shape's, so a change in the machine's load shows in both.
  const both = await timedRequests(bench.url, [path, floorPath], 2 * requests, 2 * budget);
  const ours = both.filter((_, i) => i % 2 === 0);
  const floor = both.filter((_, i) => i % 2 === 1);
  const oursP50 = percentile(ours, 50);
  const floorP50 = percentile(floor, 50);
  const theirs = cluster
    ? await timePeerPage(cluster.client, shape, `page_${index}`, requests, budget)
    : undefined;
  summarize({
    measure: `${shape.label}, first page p50 above our floor`,
    size,
    ours: oursP50 - floorP50,
    peer: theirs?.p50 ?? NaN,
    unit: 'ms',
    limit: 1,
    target: '<= 1.0x PostgreSQL',
    peerLabel: 'PostgreSQL',
  });
  return {
    shape: shape.label,
    matches: cluster
      ? await peerMatches(cluster.client, shape)
      : checked.ids.length < 25
        ? checked.ids.length
        : '>= 25',
    'ours p50 ms': ms(oursP50),
    'ours p99 ms': ms(percentile(ours, 99)),
    'floor p50 ms': ms(floorP50),
    'PG p50 ms': theirs ? ms(theirs.p50) : '-',
    'PG p99 ms': theirs ? ms(theirs.p99) : '-',
    '(ours-floor)/PG': theirs ? ((oursP50 - floorP50) / theirs.p50).toFixed(2) : '-',
    'runs ours/PG': `${ours.length}/${theirs?.runs ?? '-'}`,
  };
}

async function main() {
  const install = withoutPostgres ? undefined : findPostgres();
  if (!install) {
    console.error(
      withoutPostgres
        ? 'PostgreSQL left out (--without-postgres, --only sorted or --only floor): our side only.'
        : 'PostgreSQL with pg_trgm not found (PG_BINDIR, /usr/lib/postgresql/<v>/bin, pg_config): our side only.',
    );
  }
  const cluster = install ? await startPostgres(install) : undefined;
  const results: Array<{ size: number } & Awaited<ReturnType<typeof measureSize>>> = [];
  try {
    for (const size of sizes) results.push({ size, ...(await measureSize(size, cluster)) });
  } finally {
    await cluster?.stop();
  }
  let submitted: SubmitFigures | undefined;
  if (submitSize > 0) {
    console.error(`submitting ${submitSize.toLocaleString('en-US')} biosamples to a fresh store ...`);
    submitted = await measureSubmit({ biosamples: submitSize });
    summarizeAbsolute({
      measure: 'submit through POST /metadata/json:submit',
      size: submitSize,
      ours: submitted.submitSeconds,
      unit: 's',
      limit: 15,
      peer: `${Math.round(submitSize / submitted.submitSeconds).toLocaleString('en-US')} biosamples/s, ${submitted.cpuSeconds.toFixed(1)} CPU s${
        submitted.mainThreadCpuSeconds === undefined
          ? ''
          : ` (main thread ${submitted.mainThreadCpuSeconds.toFixed(1)})`
      }`,
    });
  }

  const [load1] = os.loadavg();
  console.log(`npm run bench:search -- ${process.argv.slice(2).join(' ')}`.trimEnd());
  console.log(
    `${os.cpus().length} cores, load average ${load1!.toFixed(2)} at the end; ` +
      (install
        ? `${install.version}, stock settings (${Object.entries(cluster!.settings)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')})`
        : 'no PostgreSQL'),
  );
  console.log(
    `\nEvery target in one table (p50 over ${requests} sequential requests or ${budget} s; ` +
      `the request floor and sorted pages from the service in its own process, NODE_ENV=production)\n`,
  );
  console.log(table(summaryRows().map((r) => ({ ...r, size: r.size.toLocaleString('en-US') }))));
  console.log('\nThe details\n');
  for (const r of results) {
    if (!r.service) continue;
    console.log(
      `\nRequest floor, ${r.size.toLocaleString('en-US')} biosamples: the service (src/main.ts, own process) ` +
        `against bare node:http (own process) answering the same bytes; server CPU from /proc\n`,
    );
    console.log(table(r.service.floor));
    if (floorOnly) continue;
    console.log(
      `\nSorted listings, ${r.size.toLocaleString('en-US')} biosamples (page 401: 10,000 records skipped; ` +
        'first asked: the first request for that page in the process)\n',
    );
    console.log(table(r.service.sorted));
  }
  if (sortedOnly || floorOnly) return;
  if (submitted) {
    console.log(
      `\nSubmit ${submitted.biosamples.toLocaleString('en-US')} biosamples: ${submitted.submitSeconds.toFixed(1)} s; ` +
        `server phases ${Object.entries(submitted.timingsMs)
          .map(([phase, t]) => `${phase} ${(t / 1000).toFixed(1)} s`)
          .join(', ')}; payload ${(submitted.payloadBytes / 1e6).toFixed(1)} MB`,
    );
  }
  for (const r of results) {
    if (r.pageRows.length > 0) {
      console.log(
        `\nFirst page of 25 by id, ${r.size.toLocaleString('en-US')} biosamples: ours through HTTP ` +
          `(/nmdcschema/biosample_set, filter $regex), PostgreSQL as a prepared statement; ` +
          `${requests} sequential requests each, or as many as fit in ${budget} s (runs)\n`,
      );
      console.log(table(r.pageRows));
    }
    if (!r.countRow) continue;
    console.log(
      `\nCompact find with meta.count, ${r.size.toLocaleString('en-US')} biosamples (PostgreSQL: count(*))\n`,
    );
    console.log(table([r.countRow]));
  }
  console.log('\nLoad (generated biosamples) and index sizes\n');
  console.log(table(results.map((r) => r.loadRow!)));
  if (withScan) {
    console.log('\nSearch index rebuild (embedded FTS5, biosample_set)\n');
    console.log(table(results.flatMap((r) => (r.rebuild ? [r.rebuild] : []))));
    console.log(
      '\nQueries through HTTP, sequential, page of 25 (indexed vs full scan, same store, same run)\n',
    );
    console.log(table(results.flatMap((r) => r.scan)));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
