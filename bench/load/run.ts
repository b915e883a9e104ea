/**
 * `npm run bench:load` — a mixed read workload at a fixed request rate against the embedded
 * default, served by a separate process on 127.0.0.1 with 10^5 biosamples.
 * Flags: --rate 1000 --seconds 60 --biosamples 100000 --connections 64 --workers <cores>
 * --warm-seconds 5.
 * The server runs as deployed (`NODE_ENV=production`); `--validate-responses 1` also checks every
 * answer against the contract, as the tests and a development server do.
 * Reports throughput, p50/p99, errors, 5xx, timeouts and the server's resident memory. Requests
 * are paced evenly and timed from when each was due (`runReads` in bench/support/read-workload.ts).
 * Before the measured run, each path is asked twice, then the same paced workload runs unmeasured
 * for `--warm-seconds`: without that, the measured run began with the client's and the servers'
 * first seconds of the paced workload (its connections, its code paths compiled), all of them
 * answered in over 100 ms, which set the whole run's p99 (492 ms, against 57 ms with 3 s of it).
 *
 * `--submit N` also submits N new biosamples (`POST /metadata/json:submit`) two seconds into the
 * reads, and reports the reads answered while it was applied: what a large submission costs the
 * service's other users. `--write-thread 0` applies it on the server's main thread
 * (`WRITE_THREAD=false`), for comparison.
 */
import fs from 'node:fs';
import os from 'node:os';
import { startServerProcess } from '../support/server-process.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { passwordToken, percentile } from '../support/embedded.ts';
import {
  latencyByKind,
  latencyLine,
  slowBySecond,
  loadReadData,
  readPaths,
  runReads,
  warmReads,
} from '../support/read-workload.ts';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const rate = flag('rate', 1000);
const seconds = flag('seconds', 60);
const biosamples = flag('biosamples', 100_000);
const connections = flag('connections', 64);
const workers = flag('workers', os.availableParallelism());
const warmSeconds = flag('warm-seconds', 5);
const submit = flag('submit', 0);
const writeThread = flag('write-thread', 1) !== 0;
const validateResponses = flag('validate-responses', 0) !== 0;
const ADMIN = { username: 'bench-admin', password: 'bench load admin 5521' };

/** The body of a submission of `biosamples` new biosamples of a new study. */
function submissionBody(biosamples: number): Uint8Array<ArrayBuffer> {
  const db = generateDatabase({ studies: 1, biosamples, dataObjects: 0, seed: 4242 });
  return new TextEncoder().encode(
    JSON.stringify({ study_set: db.study_set, biosample_set: db.biosample_set }),
  );
}

/**
 * Submits `body` two seconds after `since` (the reads' start), answering when it was applied (ms
 * since `since`) and the server's phases (`GET /runs/{run_id}`). The body is made before the reads
 * start: made here, it held the load generator's event loop for seconds, and every read due then
 * was counted late.
 */
async function submitDuring(url: string, body: Uint8Array<ArrayBuffer>, since: number) {
  const token = await passwordToken(url, ADMIN);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2000 - (performance.now() - since))));
  const from = performance.now() - since;
  const res = await fetch(`${url}/metadata/json:submit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
  const text = await res.text();
  const to = performance.now() - since;
  let phases = '';
  try {
    const runId = (JSON.parse(text) as { detail: { run_id: string } }).detail.run_id;
    const run = (await (
      await fetch(`${url}/runs/${encodeURIComponent(runId)}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { timings_ms: Record<string, number> };
    phases = Object.entries(run.timings_ms)
      .map(([phase, ms]) => `${phase} ${(ms / 1000).toFixed(1)} s`)
      .join(', ');
  } catch {
    // no run to read: the answer is reported as it came
  }
  return { status: res.status, text, from, to, mb: body.length / 1e6, phases };
}

function readsLine(what: string, ms: number[]): string {
  if (ms.length === 0) return `${what}: none`;
  return `${what}: ${ms.length}, latency ms p50 ${percentile(ms, 50).toFixed(1)}, p99 ${percentile(ms, 99).toFixed(1)}, max ${ms.reduce((a, b) => Math.max(a, b), 0).toFixed(1)}`;
}

async function main(): Promise<void> {
  const { dataDir, seconds: loadSeconds } = loadReadData(biosamples);
  process.stdout.write(
    `data: ${biosamples} biosamples generated and loaded in ${loadSeconds.toFixed(1)} s\n`,
  );

  const server = await startServerProcess(dataDir, workers, {
    // As deployed: answers are not checked against the contract on the way out (tests check them).
    NODE_ENV: 'production',
    VALIDATE_RESPONSES: String(validateResponses),
    ...(submit > 0
      ? {
          ADMIN_USERNAME: ADMIN.username,
          ADMIN_PASSWORD: ADMIN.password,
          MAX_BODY_BYTES: String(1024 * 1024 * 1024),
          WRITE_THREAD: String(writeThread),
        }
      : {}),
  });
  const { url } = server;
  try {
    const paths = await readPaths(url);
    // Warm-up, so that growth after it is what a leak would show.
    await warmReads(url, paths);
    if (warmSeconds > 0) await runReads(url, paths, { rate, seconds: warmSeconds, connections });
    const body = submit > 0 ? submissionBody(submit) : undefined;
    const before = server.memory();
    const cpuBefore = server.cpu();
    // The reads' own clock starts within a millisecond of this one: nothing runs in between.
    const started = performance.now();
    const submitted = body ? submitDuring(url, body, started) : undefined;
    const { result, statuses, achieved, responses } = await runReads(url, paths, {
      rate,
      seconds,
      connections,
    });
    const applied = await submitted;
    const after = server.memory();
    const cpuMs = (server.cpu() - cpuBefore) * 1000;
    const growth = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)}%`;
    const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    const lines = [
      `workload: ${paths.length} rotating paths (by-id, schema by-id, compact finds, schema finds, .search) at ${rate} req/s for ${seconds} s after ${warmSeconds} s of it unmeasured, ${connections} connections, ${workers} server process(es), NODE_ENV=production${validateResponses ? ' with answers checked' : ''}`,
      `pacing: request k is due k/${rate} s after the start; latency is from when it was due to its last byte (waits for a connection included)`,
      `requests: ${result.requests.total} sent, ${achieved.toFixed(0)} req/s achieved (mean ${result.requests.average.toFixed(0)}/s)`,
      `latency ms: ${latencyLine(result.latency)}`,
      `server CPU (all processes and threads): ${(cpuMs / 1000).toFixed(1)} s, ${(cpuMs / result.requests.total).toFixed(2)} ms a request`,
      'latency ms by kind of request:',
      ...latencyByKind(responses ?? []),
      `responses over 100 ms by second of the run (when due): ${slowBySecond(responses ?? [], 100)}`,
      `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`,
      `errors: ${result.errors}, timeouts: ${result.timeouts}, 5xx: ${fivexx}, non-2xx: ${result.non2xx}`,
      `server RSS MiB (all processes): before ${before.rss.toFixed(1)}, after ${after.rss.toFixed(1)} (${growth(before.rss, after.rss)}); ` +
        `anonymous part ${before.anon.toFixed(1)} -> ${after.anon.toFixed(1)} (${growth(before.anon, after.anon)}), the rest is the mapped store file`,
      `load average at end: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} on ${os.cpus().length} cores`,
    ];
    if (applied) {
      const due = (from: number, to: number) =>
        (responses ?? []).filter((r) => r.at - r.ms >= from && r.at - r.ms < to).map((r) => r.ms);
      const during = due(applied.from, applied.to);
      // What the service does once a large write is in (caches catching up, a checkpoint).
      const after5 = due(applied.to, applied.to + 5000);
      lines.push(
        `submission of ${submit} biosamples (${applied.mb.toFixed(0)} MB, WRITE_THREAD=${writeThread}) from +${(applied.from / 1000).toFixed(1)} s to +${(applied.to / 1000).toFixed(1)} s: ${applied.status}${applied.status === 200 ? '' : ` ${applied.text.slice(0, 300)}`}${applied.phases ? `; server: ${applied.phases}` : ''}`,
        readsLine('reads answered meanwhile', during),
        readsLine('reads due in the 5 s after its answer', after5),
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    const ok =
      achieved >= rate * 0.95 &&
      fivexx === 0 &&
      result.timeouts === 0 &&
      result.errors === 0 &&
      // A submission adds its records to the store and the caches: growth then is no leak.
      (body !== undefined || after.rss <= before.rss * 1.1);
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
