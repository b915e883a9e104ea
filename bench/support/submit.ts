/**
 * A metadata submission through HTTP on the embedded default, timed, each side as deployed: the
 * service (src/main.ts) in a process of its own on a fresh store, one generated study submitted
 * first, then `POST /metadata/json:submit` of generated biosamples sent by a client in a process
 * of its own, with the server's own phases from `GET /runs/{run_id}` and its threads' CPU from
 * /proc. Optionally first the validation throughput of the service layer, in this process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { benchConfig, passwordToken } from './embedded.ts';
import { startServerProcess } from './server-process.ts';
import { openServices } from '../../src/services.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import type { Doc } from '../../src/store/port.ts';
import { compileSchema, MetadataValidator } from '../../src/validation/index.ts';
import { forkedServers } from '../../test/reliability/process-faults.ts';
import { threadsCpuMs } from '../../test/support/thread-cpu.ts';

const ADMIN = { username: 'bench-admin', password: 'bench-admin-password-5531' };

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Prints the seconds elapsed every second on one line until `work` settles. */
async function withProgress<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const tick = setInterval(() => {
    process.stderr.write(`\r  ${label}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }, 1000);
  try {
    return await work();
  } finally {
    clearInterval(tick);
    process.stderr.write(`\r  ${label}: done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
}

/**
 * The client: reads the body from the file named in argv and, at the line `go` on stdin, sends it
 * with the token in BENCH_TOKEN, then prints the status and the answer as one JSON line.
 */
const CLIENT = `
const fs = require('node:fs');
const [url, file] = process.argv.slice(1);
const body = fs.readFileSync(file);
process.stdin.once('data', async () => {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + process.env.BENCH_TOKEN },
      body,
    });
    process.stdout.write(JSON.stringify({ status: res.status, body: await res.text() }) + '\\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ status: 0, body: String(err) }) + '\\n');
  }
  process.exit(0);
});
process.stdout.write('ready\\n');
`;

/** A client process holding `body`, ready to send it to `url` (`send` answers the status and body). */
async function submittingClient(
  url: string,
  token: string,
  body: Uint8Array,
): Promise<{ send(): Promise<{ status: number; body: string }>; stop(): void }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-client-'));
  const file = path.join(dir, 'body.json');
  fs.writeFileSync(file, body);
  const child = spawn(process.execPath, ['-e', CLIENT, url, file], {
    env: { ...process.env, BENCH_TOKEN: token },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = once(child, 'exit').then(() => {
    throw new Error('the submitting client exited before it answered');
  });
  const next = async () => {
    const line = await Promise.race([lines.next(), exited]);
    if (line.done) throw new Error('the submitting client closed its output');
    return line.value;
  };
  const stop = () => {
    if (child.exitCode === null) child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    if ((await next()) !== 'ready') throw new Error('the submitting client did not start');
  } catch (err) {
    stop();
    throw err;
  }
  return {
    send: async () => {
      child.stdin!.write('go\n');
      return JSON.parse(await next()) as { status: number; body: string };
    },
    stop,
  };
}

export interface SubmitFigures {
  biosamples: number;
  /** From sending the (already serialised) body to the answer. */
  submitSeconds: number;
  /** CPU seconds of the service's processes (their worker threads included) meanwhile. */
  cpuSeconds: number;
  /** CPU seconds of the server process's main thread meanwhile (its event loop), if known. */
  mainThreadCpuSeconds?: number;
  /**
   * CPU seconds of the busiest other thread meanwhile, if known: the writing thread, whose work
   * sets a large submission's time (and moves less with other work on the machine than wall time).
   */
  busiestThreadCpuSeconds?: number;
  /** The longest the event loop was held meanwhile, ms (other requests waited that long). */
  maxEventLoopDelayMs: number;
  /** The server's phases, from the run record. */
  timingsMs: Record<string, number>;
  counts: Record<string, { inserted: number }>;
  payloadBytes: number;
  /** Biosamples per second of `MetadataValidator.validateDatabase`, when measured. */
  validateRate?: number;
  validateCount?: number;
  validateSeconds?: number;
}

export async function measureSubmit(options: {
  biosamples: number;
  validate?: number;
  /** The server's `WRITE_THREAD` setting (default: the service's default). */
  writeThread?: boolean;
}): Promise<SubmitFigures> {
  const { biosamples } = options;
  const validateCount = options.validate ?? 0;
  log(`generating ${Math.max(biosamples, validateCount)} biosamples of one study`);
  const db = generateDatabase({
    studies: 1,
    biosamples: Math.max(biosamples, validateCount),
    dataObjects: 0,
  });
  const study = db.study_set![0]!;
  const all = db.biosample_set!;
  const figures: Partial<SubmitFigures> =
    validateCount > 0 ? await validationThroughput(study, all.slice(0, validateCount)) : {};

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bench-submit-'));
  // As deployed: the service in a process of its own (its heap holds nothing of the bench's).
  const server = await startServerProcess(dataDir, 1, {
    NODE_ENV: 'production',
    MAX_BODY_BYTES: String(1024 * 1024 * 1024),
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    ...(options.writeThread === undefined ? {} : { WRITE_THREAD: String(options.writeThread) }),
  });
  const { url } = server;
  try {
    const token = await passwordToken(url, ADMIN);
    const authorized = { authorization: `Bearer ${token}` };
    // The study the biosamples belong to, submitted first (references must resolve).
    const res = await fetch(`${url}/metadata/json:submit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authorized },
      body: JSON.stringify({ study_set: [study] }),
    });
    if (res.status !== 200) throw new Error(`submit: ${res.status} ${(await res.text()).slice(0, 500)}`);

    // Encoded, and handed to the client, before the clock starts.
    const payload = new TextEncoder().encode(JSON.stringify({ biosample_set: all.slice(0, biosamples) }));
    const client = await submittingClient(`${url}/metadata/json:submit`, token, payload);
    // The server process (the cluster's primary forks it): its event loop is its main thread.
    const [worker] = forkedServers(server.pid);
    if (worker === undefined) throw new Error('the service has no server process');
    await eventLoopDelayMaxMs(url); // the longest delay is counted from here (each scrape resets it)
    const s0 = performance.now();
    const c0 = server.cpu();
    const t0 = threadsCpuMs(worker);
    const answer = await withProgress(
      `submitting ${biosamples} biosamples (${(payload.length / 1e6).toFixed(0)} MB of JSON)`,
      () => client.send(),
    ).finally(() => client.stop());
    const submitSeconds = (performance.now() - s0) / 1000;
    const cpuSeconds = server.cpu() - c0;
    const t1 = threadsCpuMs(worker);
    const maxEventLoopDelayMs = await eventLoopDelayMaxMs(url);
    if (answer.status !== 200) throw new Error(`submit: ${answer.status} ${answer.body.slice(0, 500)}`);
    const runId = (JSON.parse(answer.body) as { detail: { run_id: string } }).detail.run_id;
    const used = (task: number) => ((t1.get(task) ?? 0) - (t0.get(task) ?? 0)) / 1000;
    const others = [...t1.keys()].filter((task) => task !== worker).map(used);
    const run = (await (
      await fetch(`${url}/runs/${encodeURIComponent(runId)}`, { headers: authorized })
    ).json()) as { timings_ms: Record<string, number>; counts: Record<string, { inserted: number }> };
    const counted = (await (await fetch(`${url}/biosamples?per_page=1`)).json()) as {
      meta: { count: number };
    };
    if (counted.meta.count !== biosamples)
      throw new Error(`expected ${biosamples} biosamples stored, found ${counted.meta.count}`);
    return {
      ...figures,
      biosamples,
      submitSeconds,
      cpuSeconds,
      mainThreadCpuSeconds: t1.has(worker) ? used(worker) : undefined,
      busiestThreadCpuSeconds: others.length === 0 ? undefined : Math.max(...others),
      maxEventLoopDelayMs,
      timingsMs: run.timings_ms,
      counts: run.counts,
      payloadBytes: payload.length,
    };
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The longest event-loop delay of the server since the last scrape of its metrics, ms (scraping resets it). */
async function eventLoopDelayMaxMs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('nmdc_nodejs_eventloop_lag_max_seconds '));
  if (!line) throw new Error('the server reports no nmdc_nodejs_eventloop_lag_max_seconds');
  return Number(line.split(' ')[1]) * 1000;
}

/**
 * Validation throughput of the service layer: `biosamples` of `study` checked by
 * `MetadataValidator.validateDatabase` in this process, against a store of its own holding the
 * study (the biosamples reference it).
 */
async function validationThroughput(study: Doc, biosamples: Doc[]): Promise<Partial<SubmitFigures>> {
  const { dataDir, config } = benchConfig('nmdc-bench-validate-');
  const services = await openServices(config, pino({ level: 'silent' }));
  try {
    await services.store.upsertMany('study_set', [study]);
    compileSchema();
    const validator = new MetadataValidator(services.store);
    const warm = await validator.validateDatabase({ biosample_set: biosamples.slice(0, 2000) });
    if (!warm.valid)
      throw new Error(`generated biosamples do not validate: ${JSON.stringify(warm).slice(0, 500)}`);
    const v0 = performance.now();
    const outcome = await withProgress(`validating ${biosamples.length} biosamples`, () =>
      validator.validateDatabase({ biosample_set: biosamples }),
    );
    const validateSeconds = (performance.now() - v0) / 1000;
    if (!outcome.valid) throw new Error('validation failed');
    return {
      validateSeconds,
      validateCount: biosamples.length,
      validateRate: biosamples.length / validateSeconds,
    };
  } finally {
    await services.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
