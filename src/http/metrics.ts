/**
 * `GET /metrics` in the Prometheus text format (prom-client): requests counted and timed by
 * method, route (the path template, never the raw path) and status; requests in flight; records,
 * storage and index bytes per collection; the writes the search and edge indexes still have to
 * catch up on; queued trigger firings, unclaimed jobs and running operations; and the Node.js
 * process (CPU, memory, event-loop delay, garbage collection). Each server process answers its own
 * counters; the store's figures are the same from every process.
 */
import express, { type Request, type RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Services } from '../services.ts';
import { gaveWay } from '../turns.ts';

/**
 * When a request was first looked at, for a way in that looks at it before counting it (the fast
 * path, src/http/fast-path.ts): its time is counted from then.
 */
export const REQUEST_STARTED = Symbol('requestStarted');

/** Route labels of requests that reach no API route: a few fixed prefixes, else `unmatched`. */
const OTHER_ROUTES = ['/docs', '/oidc', '/login', '/.well-known', '/openapi'];

/** The label of a request's route: its OpenAPI path template, an Express route, or a fixed bucket. */
export function routeLabel(req: Request): string {
  const openApiRoute = (req as Request & { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
  if (openApiRoute) return openApiRoute;
  if (req.route?.path && typeof req.route.path === 'string') return `${req.baseUrl}${req.route.path}`;
  const path = req.path;
  return (
    OTHER_ROUTES.find(
      (prefix) =>
        path === prefix ||
        path.startsWith(`${prefix}/`) ||
        path.startsWith(`${prefix}-`) ||
        path.startsWith(`${prefix}.`),
    ) ?? 'unmatched'
  );
}

export interface Metrics {
  registry: Registry;
  /** Counts and times every request; mount first. */
  observe: RequestHandler;
  /** `GET /metrics`. */
  router: express.Router;
}

/** Collections the workflow queues live in (their names are the capabilities' own). */
const QUEUES = {
  triggerFirings: 'trigger_firings',
  jobs: 'jobs',
  operations: 'operations',
};

export function createMetrics(deps: Pick<Services, 'store' | 'searchIndex' | 'edgeIndex'>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'nmdc_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'nmdc_http_requests_total',
    help: 'HTTP requests answered, by method, route (path template) and status',
    labelNames,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'nmdc_http_request_duration_seconds',
    help: 'Time to answer HTTP requests (until the last byte was handed to the socket), by method, route and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: 'nmdc_http_requests_in_flight',
    help: 'HTTP requests being answered',
    registers: [registry],
  });

  const { store, searchIndex, edgeIndex } = deps;
  new Gauge({
    name: 'nmdc_collection_records',
    help: 'Records per collection of the store',
    labelNames: ['collection'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await store.collectionStats()) this.set({ collection: s.collection }, s.count);
    },
  });
  new Gauge({
    name: 'nmdc_collection_bytes',
    help: 'Bytes per collection of the store: its records (kind="records") and its indexes (kind="indexes")',
    labelNames: ['collection', 'kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await store.collectionStats()) {
        this.set({ collection: s.collection, kind: 'records' }, s.storageSize);
        this.set({ collection: s.collection, kind: 'indexes' }, s.totalIndexSize);
      }
    },
  });
  new Gauge({
    name: 'nmdc_index_pending_changes',
    help: "Writes of the store not yet in an index (0 for an index written in the records' own transaction)",
    labelNames: ['index', 'engine'],
    registers: [registry],
    async collect() {
      const latest = await store.latestSeq();
      for (const [name, index, engine] of [
        ['search', searchIndex, searchIndex.engine],
        ['edges', edgeIndex, edgeIndex.synchronous ? 'embedded' : 'follower'],
      ] as const) {
        const pending = index.synchronous ? 0 : Math.max(0, latest - (await index.watermark()));
        this.set({ index: name, engine }, pending);
      }
    },
  });
  new Gauge({
    name: 'nmdc_bulk_work_waits',
    help:
      'How often (measure="times") and how long in all (measure="seconds") bulk work on the event loop ' +
      "(a large body's parsing, a submission's validation) has waited for other requests since the process started",
    labelNames: ['measure'],
    registers: [registry],
    collect() {
      this.set({ measure: 'times' }, gaveWay.times);
      this.set({ measure: 'seconds' }, gaveWay.ms / 1000);
    },
  });
  new Gauge({
    name: 'nmdc_queue_depth',
    help: 'Work waiting: trigger firings not yet turned into jobs, jobs no site claimed, operations not done',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.set(
        { queue: 'trigger_firings_pending' },
        await store.count(QUEUES.triggerFirings, { status: 'pending' }),
      );
      this.set({ queue: 'jobs_unclaimed' }, await store.count(QUEUES.jobs, { claims: { $size: 0 } }));
      this.set(
        { queue: 'operations_running' },
        await store.count(QUEUES.operations, { done: { $ne: true } }),
      );
    },
  });

  const observe: RequestHandler = (req, res, next) => {
    const started =
      (req as unknown as Record<symbol, bigint | undefined>)[REQUEST_STARTED] ?? process.hrtime.bigint();
    inFlight.inc();
    let counted = false;
    const count = () => {
      if (counted) return;
      counted = true;
      inFlight.dec();
      const labels = { method: req.method, route: routeLabel(req), status: String(res.statusCode) };
      requests.inc(labels);
      durations.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    };
    // Counted once (`counted`): plain listeners, cheaper than once-wrappers on each response.
    res.on('finish', count);
    res.on('close', count);
    next();
  };

  const router = express.Router();
  router.get('/metrics', async (_req, res) => {
    const text = await registry.metrics();
    res.set('Cache-Control', 'no-store').type(registry.contentType).send(text);
  });
  return { registry, observe, router };
}
