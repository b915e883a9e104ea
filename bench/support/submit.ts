/**
 * A metadata submission through HTTP on the embedded default, timed: a fresh store, the app
 * listening on 127.0.0.1 in this process, one generated study submitted first, then (optionally)
 * the validation throughput of the service layer, then `POST /metadata/json:submit` of generated
 * biosamples sent by a client in a process of its own (as a user's would be: its sending of the
 * body is not counted to the server's threads), with the server's own phases from
 * `GET /runs/{run_id}`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino } from 'pino';
import { benchConfig, passwordToken } from './embedded.ts';
import { buildApp } from '../../src/app.ts';
import { openServices } from '../../src/services.ts';
import { generateDatabase } from '../../src/data/generator.ts';
import { compileSchema, MetadataValidator } from '../../src/validation/index.ts';
import { mainThreadCpuMs, threadsCpuMs } from '../../test/support/thread-cpu.ts';

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

/** CPU seconds of this process's main thread so far (Linux), or undefined elsewhere: what a submit holds the server's thread. */
export function mainThreadCpuSeconds(): number | undefined {
  const ms = mainThreadCpuMs();
  return ms === undefined ? undefined : ms / 1000;
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
  /** CPU seconds of this process (the server and its worker threads) meanwhile. */
  cpuSeconds: number;
  /** CPU seconds of its main thread meanwhile (the server's event loop), if known. */
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
  const { dataDir, config } = benchConfig('nmdc-bench-submit-', {
    MAX_BODY_BYTES: String(1024 * 1024 * 1024),
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    ...(options.writeThread === undefined ? {} : { WRITE_THREAD: String(options.writeThread) }),
  });
  const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }, pino.destination(2));
  const services = await openServices(config, logger);
  const { store } = services;
  const app = buildApp(services);
  // As `npm start` does before it listens (src/main.ts): otherwise the submission compiles the
  // Biosample validator, half a second with nothing else answered, which a server never does.
  compileSchema();
  services.start();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  server.requestTimeout = 0;
  // Idle keep-alive sockets outlive the in-process validation pass, so the client never reuses
  // one the server has just closed.
  server.keepAliveTimeout = 65_000;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  try {
    log(`generating ${Math.max(biosamples, validateCount)} biosamples of one study`);
    const db = generateDatabase({
      studies: 1,
      biosamples: Math.max(biosamples, validateCount),
      dataObjects: 0,
    });
    const study = db.study_set![0]!;
    const all = db.biosample_set!;

    const token = await passwordToken(url, ADMIN);
    const submit = async (payload: string | Uint8Array<ArrayBuffer>) => {
      const res = await fetch(`${url}/metadata/json:submit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: payload,
      });
      const body = (await res.json()) as { detail: { run_id: string } };
      if (res.status !== 200) throw new Error(`submit: ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
      return body.detail.run_id;
    };

    // The study the biosamples belong to, submitted first (references must resolve).
    await submit(JSON.stringify({ study_set: [study] }));

    const figures: Partial<SubmitFigures> = {};
    if (validateCount > 0) {
      // Validation throughput (the study is in the store; biosamples reference it).
      const validator = new MetadataValidator(store);
      const warm = await validator.validateDatabase({ biosample_set: all.slice(0, 2000) });
      if (!warm.valid)
        throw new Error(`generated biosamples do not validate: ${JSON.stringify(warm).slice(0, 500)}`);
      const toValidate = { biosample_set: all.slice(0, validateCount) };
      const v0 = performance.now();
      const outcome = await withProgress(`validating ${validateCount} biosamples`, () =>
        validator.validateDatabase(toValidate),
      );
      const validateSeconds = (performance.now() - v0) / 1000;
      if (!outcome.valid) throw new Error('validation failed');
      Object.assign(figures, {
        validateSeconds,
        validateCount,
        validateRate: validateCount / validateSeconds,
      });
    }

    // Encoded, and handed to the client, before the clock and the event-loop monitor start.
    const payload = new TextEncoder().encode(JSON.stringify({ biosample_set: all.slice(0, biosamples) }));
    const client = await submittingClient(`${url}/metadata/json:submit`, token, payload);
    const s0 = performance.now();
    const c0 = process.cpuUsage();
    const m0 = mainThreadCpuSeconds();
    const t0 = threadsCpuMs();
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const answer = await withProgress(
      `submitting ${biosamples} biosamples (${(payload.length / 1e6).toFixed(0)} MB of JSON)`,
      () => client.send(),
    ).finally(() => client.stop());
    const submitSeconds = (performance.now() - s0) / 1000;
    const cpu = process.cpuUsage(c0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    delay.disable();
    if (answer.status !== 200) throw new Error(`submit: ${answer.status} ${answer.body.slice(0, 500)}`);
    const runId = (JSON.parse(answer.body) as { detail: { run_id: string } }).detail.run_id;
    const m1 = mainThreadCpuSeconds();
    const mainThread = m0 === undefined || m1 === undefined ? undefined : m1 - m0;
    const busiest = [...threadsCpuMs()]
      .filter(([task]) => task !== process.pid)
      .map(([task, ms]) => ms - (t0.get(task) ?? 0));
    const run = (await (
      await fetch(`${url}/runs/${encodeURIComponent(runId)}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { timings_ms: Record<string, number>; counts: Record<string, { inserted: number }> };
    const stored = await store.count('biosample_set', {});
    if (stored !== biosamples) throw new Error(`expected ${biosamples} biosamples stored, found ${stored}`);
    return {
      ...figures,
      biosamples,
      submitSeconds,
      cpuSeconds,
      mainThreadCpuSeconds: mainThread,
      busiestThreadCpuSeconds: busiest.length === 0 ? undefined : Math.max(...busiest) / 1000,
      maxEventLoopDelayMs: delay.max / 1e6,
      timingsMs: run.timings_ms,
      counts: run.counts,
      payloadBytes: payload.length,
    };
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await services.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
