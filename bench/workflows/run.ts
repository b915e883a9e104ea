/**
 * `npm run bench:workflows` — site clients working beside the metadata read load.
 *
 * The service runs as its own process (`--workers`, default one per core) on 10^5 generated
 * biosamples. Setup: `--clients` sites (100), each with the capabilities of a catalog workflow and
 * one site client; `--jobs` jobs (1000) of that workflow; every client claims one job. Then three
 * runs of `--seconds` (60) each:
 *   1. the read workload of `npm run bench:load` alone, at `--rate` requests/s (1000);
 *   2. the same read workload while the site clients, one connection each at `--client-rate`
 *      requests/s (10), alternately poll `GET /jobs` (a client's default filter: jobs its site has
 *      not claimed) and patch an operation's progress (`PATCH /operations/{op_id}`);
 *   3. the reads alone again (a single run's p99 varies; runs 1 and 3 are averaged).
 * Prints the read latencies of the runs, the site clients' rate, latencies and errors, and whether
 * the targets hold: no errors anywhere, and the reads' p99 in run 2 within 20% of runs 1 and 3.
 */
import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import { startServerProcess } from '../support/server-process.ts';
import {
  latencyLine,
  loadReadData,
  readPaths,
  runReads,
  warmReads,
  type ReadRun,
} from '../support/read-workload.ts';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const biosamples = flag('biosamples', 100_000);
const rate = flag('rate', 1000);
const seconds = flag('seconds', 60);
const clients = flag('clients', 100);
const clientRate = flag('client-rate', 10);
const jobCount = flag('jobs', 1000);
const connections = flag('connections', 64);
const workers = flag('workers', os.availableParallelism());

const ADMIN = { username: 'bench-admin', password: 'workflow-bench-admin-7731' };

const log = (line: string) => process.stdout.write(`${line}\n`);

async function call(
  url: string,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; form?: Record<string, string> } = {},
): Promise<any> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  }
  const res = await fetch(`${url}${path}`, { method, headers, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** Runs `work` over `items` with at most `limit` at once. */
async function inBatches<T, R>(
  items: T[],
  limit: number,
  work: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await work(items[i]!, i);
      }
    }),
  );
  return out;
}

interface SiteClient {
  siteId: string;
  token: string;
  opId: string;
}

async function setUp(url: string): Promise<SiteClient[]> {
  const admin = (
    await call(url, 'POST', '/token', {
      form: { grant_type: 'password', username: ADMIN.username, password: ADMIN.password },
    })
  ).access_token as string;
  const workflows = (await call(url, 'GET', '/workflows')) as Array<{
    id: string;
    capability_ids?: string[];
  }>;
  const workflow = workflows.find((w) => (w.capability_ids ?? []).length > 0) ?? workflows[0]!;
  const capabilities = workflow.capability_ids ?? [];
  const sites = await inBatches(
    Array.from({ length: clients }, (_, i) => `bench-site-${String(i).padStart(3, '0')}`),
    8,
    async (siteId) => {
      await call(url, 'POST', '/sites', { token: admin, json: { id: siteId, capability_ids: capabilities } });
      const credentials = await call(url, 'POST', `/sites/${siteId}:generateCredentials`, { token: admin });
      const token = (
        await call(url, 'POST', '/token', {
          form: {
            grant_type: 'client_credentials',
            client_id: credentials.client_id,
            client_secret: credentials.client_secret,
          },
        })
      ).access_token as string;
      return { siteId, token };
    },
  );
  const jobs = await inBatches(
    Array.from({ length: jobCount }, (_, i) => i),
    8,
    async (i) =>
      (
        await call(url, 'POST', '/jobs', {
          token: sites[i % sites.length]!.token,
          json: { workflow: { id: workflow.id }, config: { object_id: `bench-object-${i}` } },
        })
      ).id as string,
  );
  const claimed = await inBatches(sites, 8, async (site, i) => {
    const op = await call(url, 'POST', `/jobs/${encodeURIComponent(jobs[i]!)}:claim`, { token: site.token });
    return { ...site, opId: op.id as string };
  });
  log(
    `setup: ${clients} sites with the capabilities of workflow ${workflow.id} (${capabilities.join(', ') || 'none'}), ` +
      `${jobCount} jobs, one claimed per site`,
  );
  return claimed;
}

/**
 * The site clients' traffic for `seconds`, from one connection per client at `clientRate` requests
 * per second each (autocannon, so the bench's own CPU stays small beside the server's): requests
 * alternate between `GET /jobs` (the client's default listing) and `PATCH` of its operation, in
 * turn for every client.
 */
async function siteClientTraffic(url: string, siteClients: SiteClient[]): Promise<ReadRun> {
  let n = 0;
  const statuses = new Map<number, number>();
  const instance = autocannon({
    url,
    connections: siteClients.length,
    connectionRate: clientRate,
    duration: seconds,
    timeout: 10,
    requests: [
      {
        setupRequest: (req: any) => {
          const i = n++;
          const client = siteClients[Math.floor(i / 2) % siteClients.length]!;
          const headers = { authorization: `Bearer ${client.token}`, 'content-type': 'application/json' };
          return i % 2 === 0
            ? { ...req, method: 'GET', path: '/jobs?max_page_size=20', headers }
            : {
                ...req,
                method: 'PATCH',
                path: `/operations/${encodeURIComponent(client.opId)}`,
                headers,
                body: JSON.stringify({ metadata: { progress: i, site: client.siteId } }),
              };
        },
      },
    ],
  });
  (instance as unknown as NodeJS.EventEmitter).on('response', (_c: unknown, status: number) =>
    statuses.set(status, (statuses.get(status) ?? 0) + 1),
  );
  const result = await instance;
  return { result, statuses, achieved: result.requests.total / seconds };
}

const describeReads = (name: string, run: ReadRun) => {
  const fivexx = [...run.statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
  log(
    `${name}: ${run.achieved.toFixed(0)} req/s, latency ms ${latencyLine(run.result.latency)}; ` +
      `errors ${run.result.errors}, timeouts ${run.result.timeouts}, ` +
      `non-2xx ${run.result.non2xx}, 5xx ${fivexx}`,
  );
  return run.result.errors + run.result.timeouts + run.result.non2xx;
};

async function main(): Promise<void> {
  const { dataDir, seconds: loadSeconds } = loadReadData(biosamples, 'nmdc-workflows-bench-');
  log(`data: ${biosamples} biosamples generated and loaded in ${loadSeconds.toFixed(1)} s`);
  const server = await startServerProcess(dataDir, workers, {
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });
  const { url } = server;
  try {
    const siteClients = await setUp(url);
    const paths = await readPaths(url);
    await warmReads(url, paths);
    const options = { rate, seconds, connections };
    log(`run 1: reads alone at ${rate} req/s for ${seconds} s (${workers} server processes)`);
    const alone = await runReads(url, paths, options);
    log(`run 2: the same reads with ${clients} site clients at ${clientRate} req/s each`);
    const [beside, traffic] = await Promise.all([
      runReads(url, paths, options),
      siteClientTraffic(url, siteClients),
    ]);
    log('run 3: reads alone again');
    const aloneAgain = await runReads(url, paths, options);
    const failures =
      describeReads('reads alone (run 1)', alone) +
      describeReads('reads beside site clients (run 2)', beside) +
      describeReads('site clients (run 2)', traffic) +
      describeReads('reads alone (run 3)', aloneAgain);
    log(
      `site clients achieved ${((100 * traffic.achieved) / (clients * clientRate)).toFixed(0)}% of ${clients * clientRate} req/s`,
    );
    // A single run's p99 varies from run to run; the runs alone before and after are averaged.
    const aloneP99 = (alone.result.latency.p99 + aloneAgain.result.latency.p99) / 2;
    const ratio = beside.result.latency.p99 / aloneP99;
    log(
      `reads' p99 beside site clients / alone (mean of runs 1 and 3): ${ratio.toFixed(2)} (target <= 1.20)`,
    );
    const ok = failures === 0 && ratio <= 1.2;
    log(ok ? 'targets met' : 'TARGETS MISSED');
    process.exitCode = ok ? 0 : 1;
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`workflow benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
