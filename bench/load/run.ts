/**
 * `npm run bench:load` — a mixed read workload at a fixed request rate against the embedded
 * default, served by a separate process on 127.0.0.1 with 10^5 biosamples.
 * Flags: --rate 1000 --seconds 60 --biosamples 100000 --connections 64 --workers <cores>.
 * Reports throughput, p50/p99, errors, 5xx, timeouts and the server's resident memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import { startServerProcess } from '../support/server-process.ts';
import { loadReadData, readPaths, runReads, warmReads } from '../support/read-workload.ts';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const rate = flag('rate', 1000);
const seconds = flag('seconds', 60);
const biosamples = flag('biosamples', 100_000);
const connections = flag('connections', 64);
const workers = flag('workers', os.availableParallelism());

async function main(): Promise<void> {
  const { dataDir, seconds: loadSeconds } = loadReadData(biosamples);
  process.stdout.write(
    `data: ${biosamples} biosamples generated and loaded in ${loadSeconds.toFixed(1)} s\n`,
  );

  const server = await startServerProcess(dataDir, workers);
  const { url } = server;
  try {
    const paths = await readPaths(url);
    // Warm-up, so that growth after it is what a leak would show.
    await warmReads(url, paths);
    const before = server.memory();
    const { result, statuses, achieved } = await runReads(url, paths, { rate, seconds, connections });
    const after = server.memory();
    const growth = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)}%`;
    const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    const lines = [
      `workload: ${paths.length} rotating paths (by-id, schema by-id, compact finds, schema finds, .search) at ${rate} req/s for ${seconds} s, ${connections} connections, ${workers} server process(es)`,
      `requests: ${result.requests.total} sent, ${achieved.toFixed(0)} req/s achieved (mean ${result.requests.average.toFixed(0)}/s)`,
      `latency ms: p50 ${result.latency.p50}, p90 ${result.latency.p90}, p99 ${result.latency.p99}, max ${result.latency.max}`,
      `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`,
      `errors: ${result.errors}, timeouts: ${result.timeouts}, 5xx: ${fivexx}, non-2xx: ${result.non2xx}`,
      `server RSS MiB (all processes): before ${before.rss.toFixed(1)}, after ${after.rss.toFixed(1)} (${growth(before.rss, after.rss)}); ` +
        `anonymous part ${before.anon.toFixed(1)} -> ${after.anon.toFixed(1)} (${growth(before.anon, after.anon)}), the rest is the mapped store file`,
      `load average at end: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} on ${os.cpus().length} cores`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const ok =
      achieved >= rate * 0.95 &&
      fivexx === 0 &&
      result.timeouts === 0 &&
      result.errors === 0 &&
      after.rss <= before.rss * 1.1;
    process.stdout.write(ok ? 'targets met\n' : 'TARGETS MISSED\n');
    process.exitCode = ok ? 0 : 1;
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`load benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
