/**
 * `npm run bench:load` — a mixed read workload at a fixed request rate against the embedded
 * default, served by a separate process on 127.0.0.1 with 10^5 biosamples.
 * Flags: --rate 1000 --seconds 60 --biosamples 100000 --connections 64 --workers <cores>.
 * Reports throughput, p50/p99, errors, 5xx, timeouts and the server's resident memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { root, startServerProcess, tsxNode } from '../support/server-process.ts';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const rate = flag('rate', 1000);
const seconds = flag('seconds', 60);
const biosamples = flag('biosamples', 100_000);
const connections = flag('connections', 64);
const workers = flag('workers', os.availableParallelism());

function run(args: string[], env: NodeJS.ProcessEnv): void {
  const r = spawnSync(process.execPath, [...tsxNode, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-load-'));
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
  process.stdout.write(
    `data: ${biosamples} biosamples generated and loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );

  const server = await startServerProcess(dataDir, workers);
  const { url } = server;
  try {
    // Real ids and studies to ask for.
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
    // Warm-up: every path twice, so page caches, prepared statements and cached counts of the
    // workload exist before the first reading; growth after that is what a leak would show.
    let w = 0;
    await autocannon({
      url,
      connections: 8,
      amount: paths.length * 2,
      requests: [{ setupRequest: (r: any) => ({ ...r, path: paths[w++ % paths.length] }) }],
    });
    const before = server.memory();
    let i = 0;
    const statuses = new Map<number, number>();
    const instance = autocannon({
      url,
      connections,
      overallRate: rate,
      duration: seconds,
      timeout: 10,
      requests: [{ setupRequest: (r: any) => ({ ...r, path: paths[i++ % paths.length] }) }],
    });
    (instance as unknown as NodeJS.EventEmitter).on('response', (_c: unknown, status: number) =>
      statuses.set(status, (statuses.get(status) ?? 0) + 1),
    );
    const result = await instance;
    const after = server.memory();
    const growth = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)}%`;
    const achieved = result.requests.total / seconds;
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
