/**
 * The metadata read workload of `npm run bench:load`, shared with benchmarks that measure other
 * traffic beside it: generated NMDC records loaded into a fresh data folder, and the rotating
 * read paths (by-id, schema by-id, compact finds, schema finds, text searches) over real ids.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import autocannon from 'autocannon';
import { root, tsxNode } from './server-process.ts';
import { percentile } from './embedded.ts';

export interface LoadedData {
  dataDir: string;
  /** Seconds spent generating and loading. */
  seconds: number;
}

function run(args: string[], env: NodeJS.ProcessEnv): void {
  const r = spawnSync(process.execPath, [...tsxNode, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
}

/** `biosamples` generated biosamples (with studies and data objects) loaded into a new data folder. */
export function loadReadData(biosamples: number, prefix = 'nmdc-load-'): LoadedData {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const env = { ...process.env, DATA_DIR: dataDir, DEMO_DATA: 'false', LOG_LEVEL: 'warn' };
  const file = path.join(dataDir, 'records.json.gz');
  const t0 = performance.now();
  const studies = Math.max(1, Math.round(biosamples / 1000));
  run(
    [
      'src/cli/generate-data.ts',
      '--studies',
      String(studies),
      '--biosamples',
      String(biosamples),
      '--data-objects',
      String(biosamples / 5),
      '--seed',
      '11',
      '--out',
      file,
    ],
    env,
  );
  run(['src/cli/load.ts', file], env);
  return { dataDir, seconds: (performance.now() - t0) / 1000 };
}

/** The rotating read paths, built from real ids and studies of the running service at `url`. */
export async function readPaths(url: string): Promise<string[]> {
  const sample = (await (
    await fetch(`${url}/biosamples?per_page=200&fields=id,name,associated_studies`)
  ).json()) as {
    results: Array<{ id: string; name?: string; associated_studies?: string[] }>;
  };
  const ids = sample.results.map((r) => r.id);
  const names = sample.results.map((r) => r.name ?? 'soil');
  const studyIds = [...new Set(sample.results.flatMap((r) => r.associated_studies ?? []))];
  const paths: string[] = [];
  for (let i = 0; i < 200; i++) {
    const id = encodeURIComponent(ids[i % ids.length]!);
    const study = encodeURIComponent(studyIds[i % studyIds.length]!);
    paths.push(
      `/biosamples/${id}`,
      `/nmdcschema/ids/${id}`,
      `/biosamples?filter=associated_studies:${study}&per_page=25`,
      `/biosamples?filter=ecosystem_category:Terrestrial,depth.has_numeric_value:>${i % 10}&per_page=10`,
      `/nmdcschema/biosample_set?filter=${encodeURIComponent(JSON.stringify({ associated_studies: studyIds[i % studyIds.length] }))}&max_page_size=10`,
      `/studies?filter=name.search:soil&per_page=5`,
      // Selective text searches (a sample's name); broad terms are measured in docs/RELIABILITY.md.
      `/biosamples?filter=name.search:${encodeURIComponent(names[i % names.length]!.replace(/,/g, ' '))}&per_page=10`,
    );
  }
  return paths;
}

/**
 * The kind of a path of `readPaths`: its ids, numbers and searched names written as placeholders,
 * so a run's latencies can be told apart by what was asked.
 */
export function pathKind(path: string): string {
  return decodeURIComponent(path)
    .replace(/nmdc:[a-z]+-[0-9a-z]+-[0-9a-z]+/g, '{id}')
    .replace(/name\.search:(?!soil&)[^&]*/, 'name.search:{a name}')
    .replace(/>\d+/g, '>{n}');
}

/** p50 and p99 of a run's responses by `pathKind`, slowest p99 first, one line each. */
export function latencyByKind(responses: NonNullable<ReadRun['responses']>): string[] {
  const byKind = new Map<string, number[]>();
  for (const r of responses) {
    const kind = pathKind(r.path ?? '');
    const list = byKind.get(kind) ?? [];
    list.push(r.ms);
    byKind.set(kind, list);
  }
  return [...byKind]
    .map(([kind, ms]) => ({ kind, n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99) }))
    .sort((a, b) => b.p99 - a.p99)
    .map(
      (k) =>
        `  p50 ${k.p50.toFixed(1).padStart(6)}  p99 ${k.p99.toFixed(1).padStart(6)}  (${k.n})  ${k.kind}`,
    );
}

/**
 * How many responses took longer than `ms`, by the second of the run they were due in ("3s:120"),
 * seconds with none left out: a backlog shows as a run of full seconds, a stall as one.
 */
export function slowBySecond(responses: NonNullable<ReadRun['responses']>, ms: number): string {
  const bySecond = new Map<number, number>();
  for (const r of responses)
    if (r.ms > ms) {
      const second = Math.floor((r.at - r.ms) / 1000);
      bySecond.set(second, (bySecond.get(second) ?? 0) + 1);
    }
  if (bySecond.size === 0) return 'none';
  return [...bySecond]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}s:${n}`)
    .join(' ');
}

/** What a run measured: the figures of autocannon's result that the benches read. */
export interface RunFigures {
  requests: { total: number; average: number };
  /** Milliseconds. */
  latency: { p50: number; p90: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

export interface ReadRun {
  result: RunFigures;
  /** Responses by status code. */
  statuses: Map<number, number>;
  /** Requests per second achieved. */
  achieved: number;
  /** Each response: when it came (ms since the run started), how long it took (ms) and its path. */
  responses?: Array<{ at: number; ms: number; path?: string }>;
}

/** Latency percentiles as the benches print them, ms. */
export function latencyLine(l: RunFigures['latency']): string {
  return `p50 ${l.p50.toFixed(1)}, p90 ${l.p90.toFixed(1)}, p99 ${l.p99.toFixed(1)}, max ${l.max.toFixed(1)}`;
}

/** A request answered or failed no later than this after it was due counts as a timeout, ms. */
const TIMEOUT_MS = 10_000;

/**
 * Sends the rotating `paths` at `rate` requests per second for `seconds`, on at most
 * `connections` keep-alive connections, counting statuses.
 *
 * The requests are paced: request k is due `k / rate` seconds after the start, whatever became of
 * the ones before, and its latency runs from when it was due to its response's last byte, so a
 * request that waited for a free connection counts its wait (an open schedule, free of
 * coordinated omission). autocannon's `overallRate` is not this: each connection sends its
 * quota for the second as fast as it is answered and then pauses until the next second, so a
 * nominal 1,000 req/s arrives as bursts in the first few tenths of each second; and its
 * correction for the omission takes `1 / rate` seconds as the interval in milliseconds
 * (autocannon 9.0.0), which counts a 500 ms response about 500 times.
 */
export async function runReads(
  url: string,
  paths: string[],
  options: { rate: number; seconds: number; connections: number },
): Promise<ReadRun> {
  const { hostname, port } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const total = Math.max(1, Math.round(options.rate * options.seconds));
  const interval = 1000 / options.rate;
  const statuses = new Map<number, number>();
  const responses: NonNullable<ReadRun['responses']> = [];
  const latencies: number[] = [];
  let errors = 0;
  let timeouts = 0;
  let non2xx = 0;
  let ended = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const send = (due: number, path: string) => {
      let settled = false;
      const settle = (status: number | 'error' | 'timeout') => {
        if (settled) return;
        settled = true;
        const now = performance.now();
        if (status === 'error') errors++;
        else if (status === 'timeout') timeouts++;
        else {
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status < 200 || status > 299) non2xx++;
          latencies.push(now - due);
          responses.push({ at: now - started, ms: now - due, path });
        }
        if (++ended === total) resolve();
      };
      const req = http.get({ hostname, port, path, agent }, (res) => {
        res.resume();
        res.on('end', () => settle(res.statusCode ?? 0));
        res.on('error', () => settle('error'));
      });
      const timer = setTimeout(
        () => {
          settle('timeout');
          req.destroy();
        },
        TIMEOUT_MS - (performance.now() - due),
      );
      req.on('close', () => clearTimeout(timer));
      req.on('error', () => settle('error'));
    };
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      while (sent < total && started + sent * interval <= now) {
        send(started + sent * interval, paths[sent % paths.length]!);
        sent++;
      }
      if (sent < total) setTimeout(tick, Math.max(0, started + sent * interval - performance.now()));
    };
    tick();
  });
  agent.destroy();
  const seconds = (performance.now() - started) / 1000;
  return {
    result: {
      requests: { total, average: latencies.length / seconds },
      latency: {
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        max: latencies.reduce((a, b) => Math.max(a, b), 0),
      },
      errors,
      timeouts,
      non2xx,
    },
    statuses,
    achieved: latencies.length / seconds,
    responses,
  };
}

/** Every path twice, so page caches, prepared statements and cached counts exist before a reading. */
export async function warmReads(url: string, paths: string[]): Promise<void> {
  let w = 0;
  await autocannon({
    url,
    connections: 8,
    amount: paths.length * 2,
    requests: [{ setupRequest: (r: any) => ({ ...r, path: paths[w++ % paths.length] }) }],
  });
}
