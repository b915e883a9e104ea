/**
 * Process entry: read config, build the services (src/services.ts), build the app, listen, shut
 * down cleanly.
 *
 * `npm start` always runs a primary process that forks `WORKERS` server processes (one by
 * default) sharing the port, and replaces any that dies, logging why at error level. The shared
 * state (demo data, accounts, signing keys) is prepared once: by the primary when there are
 * several server processes, by the only one otherwise. The stores are shared, so page tokens,
 * cursors, sessions and tokens work across them. A server process that cannot start (the port is
 * in use, the store cannot be opened) stops the start-up with a non-zero exit and a message
 * saying why; once the service has listened, one that cannot start is retried as one that died.
 * SIGTERM and SIGINT stop every process after their in-flight requests.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createLogger } from './logger.ts';
import { loadConfig, ConfigError, publicUrlWarning, type Config } from './config.ts';
import { isOpenToOthers } from './store/private-files.ts';

// The rest is imported where it is used: the primary loads only what preparing the store needs,
// and a single server process starts as fast as a process without a primary would.

/** What a server process tells the primary. */
type WorkerMessage =
  | { kind: 'listening' }
  /** It could not start: the whole start-up fails with this message. */
  | { kind: 'start-failed'; message: string }
  /** It is about to end on an error nothing handled: the cause the primary logs. */
  | { kind: 'fatal'; message: string };

function tell(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

/** The listen error in words that name the port (EADDRINUSE, EACCES). */
function listenFailure(err: NodeJS.ErrnoException, config: Config): string {
  const where = `port ${config.port} on ${config.host}`;
  if (err.code === 'EADDRINUSE')
    return `${where} is already in use (another server is listening there); stop it or set PORT`;
  if (err.code === 'EACCES') return `no permission to listen on ${where}; choose a port above 1023 (PORT)`;
  return `cannot listen on ${where}: ${err.message}`;
}

/**
 * One server process: opens the stores, builds the app and listens. With `prepare` it first
 * prepares the shared state itself (the only server process: nothing can race it).
 */
async function serve(config: Config, prepare: boolean): Promise<void> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, grouped: true });
  // Anything no handler caught ends this process, with its cause given to the primary first.
  const die = (err: unknown) => {
    logger.fatal({ err }, 'unhandled error: this server process ends');
    logger.flush();
    const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
    void tell({ kind: 'fatal', message }).finally(() => process.exit(1));
  };
  process.on('uncaughtException', die);
  process.on('unhandledRejection', die);

  const [
    { openServices },
    { answerClientErrors, buildApp, createServer, warmFastPath },
    { compileSchema },
    { prepareFieldPaths },
  ] = await Promise.all([
    import('./services.ts'),
    import('./app.ts'),
    import('./validation/index.ts'),
    import('./schema/field-paths.ts'),
  ]);
  const services = await openServices(config, logger, { prepareData: prepare });
  const app = buildApp(services);
  services.start();
  // The schema's validators are compiled on first use, holding the event loop for seconds: compile
  // them before serving, so the first validation, submission or update does not stall the others.
  const compiling = performance.now();
  compileSchema();
  // So are the field paths a sort is checked against (the schema's class tree and slots).
  prepareFieldPaths();
  logger.info({ ms: Math.round(performance.now() - compiling) }, 'NMDC schema validators compiled');
  const server: Server = createServer(app).listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) => reject(new Error(listenFailure(err, config))));
  });
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server);
  logger.info({ port: config.port, host: config.host }, 'server process listening');
  logger.flush();
  await tell({ kind: 'listening' });
  // The request checks of the hot routes are built now, a route per turn, not by their first callers.
  warmFastPath(app).then(
    ({ warmed, refused }) =>
      refused.length > 0
        ? logger.warn({ refused }, 'fast path warm-up: the validator refused these sample paths')
        : logger.debug({ warmed }, 'fast path warm-up done'),
    (err: unknown) => logger.warn({ err }, 'fast path warm-up failed'),
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.warn('in-flight requests did not finish within 10 s; closing anyway');
      server.closeAllConnections();
    }, 10_000);
    force.unref();
    // Whatever holds the stop up (a store that does not close, a drain that does not end), the
    // process ends: its supervisor, and whoever sent the signal, wait for it.
    const deadline = setTimeout(() => {
      logger.error('the server process did not stop within 20 s; exiting');
      logger.flush();
      process.exit(1);
    }, 20_000);
    deadline.unref();
    // Node keeps a connection open after the response to a request that was in flight (keep-alive):
    // close each one as soon as it is idle, so the process exits once the last response is sent.
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    idle.unref();
    server.close(() => {
      clearInterval(idle);
      services.stop().then(
        () => {
          logger.info('stopped');
          logger.flush();
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'stopping the services failed');
          logger.flush();
          process.exit(1);
        },
      );
    });
    // A connection becomes idle when its in-flight request is answered: close it then (a server
    // process of a cluster keeps answering with keep-alive while it closes).
    setInterval(() => server.closeIdleConnections(), 50).unref();
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * Shared state every worker expects to find (demo data, accounts, signing keys, the workflow
 * catalog), created once by building the services in the primary, so that workers never race to
 * create it.
 */
async function prepareShared(config: Config, logger: Logger): Promise<void> {
  const { openServices } = await import('./services.ts');
  const services = await openServices(config, logger, { prepareData: true });
  await services.stop();
}

/** Set in the environment of a server process that prepares the shared state itself. */
const PREPARES = 'NMDC_SERVER_PREPARES_STATE';

/** A worker that dies this soon after the previous one is replaced only after a pause. */
const QUICK_DEATH_MS = 5_000;
const MAX_PAUSE_MS = 30_000;

/** Forks the workers, replaces any that dies, and passes SIGTERM/SIGINT on to them. */
async function supervise(config: Config): Promise<void> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  if (!config.mongoUrl && isOpenToOthers(config.dataDir))
    logger.warn(
      { dataDir: config.dataDir },
      'DATA_DIR can be read by other users; it holds signing keys and password hashes (chmod 700 it)',
    );
  const workers = Math.max(1, config.workers);
  // Several server processes would race to create the shared state: it is made once, here. A
  // single one makes it itself, as it starts (and again, harmlessly, when it is replaced).
  if (workers > 1) await prepareShared(config, logger);
  let stopping = false;
  let listening = 0;
  let announced = false;
  const causes = new Map<Worker, string>();
  let lastDeath = 0;
  let pause = 0;
  const prewarming = new AbortController();

  const fail = (message: string) => {
    stopping = true;
    console.error(`Start-up failed: ${message}`);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    process.exit(1);
  };

  const fork = () => {
    const worker = cluster.fork(workers > 1 ? {} : { [PREPARES]: '1' });
    worker.on('message', (message: WorkerMessage) => {
      if (message.kind === 'start-failed') {
        if (!announced) fail(message.message);
        else causes.set(worker, `could not start: ${message.message}`);
      } else if (message.kind === 'fatal') causes.set(worker, message.message);
      else if (message.kind === 'listening' && ++listening === workers && !announced) {
        announced = true;
        const docs = config.publicUrlIsDefault ? `http://localhost:${config.port}` : config.publicUrl;
        logger.info({ port: config.port, host: config.host, workers }, `listening; docs at ${docs}/docs`);
        const warning = publicUrlWarning(config);
        if (warning) logger.warn(warning);
        // The store is open and prepared: its file is read into the OS cache while requests are answered.
        if (!config.mongoUrl && config.storePrewarm) void prewarm(config, logger, prewarming.signal);
      }
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    const cause = causes.get(worker) ?? (signal ? `killed by ${signal}` : `exit code ${code}`);
    causes.delete(worker);
    // A worker that keeps dying at once (a request that crashes every one) is replaced ever more slowly.
    const now = Date.now();
    pause = now - lastDeath < QUICK_DEATH_MS ? Math.min(MAX_PAUSE_MS, Math.max(250, pause * 2)) : 0;
    lastDeath = now;
    logger.error(
      { worker: worker.process.pid, code, signal, cause, restartInMs: pause },
      'server process died; starting another',
    );
    setTimeout(() => {
      if (!stopping) fork();
    }, pause);
  });

  for (let i = 0; i < workers; i++) fork();
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    prewarming.abort();
    logger.info({ signal }, 'stopping the server processes');
    const alive = Object.values(cluster.workers ?? {});
    if (alive.length === 0) process.exit(0);
    for (const worker of alive) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Reads the embedded store's file into the OS page cache, logging what it did (src/store/sqlite/prewarm.ts). */
async function prewarm(config: Config, logger: Logger, signal: AbortSignal): Promise<void> {
  const [{ embeddedStoreFile }, { prewarmFile }] = await Promise.all([
    import('./store/store-file.ts'),
    import('./store/sqlite/prewarm.ts'),
  ]);
  const file = embeddedStoreFile(config.dataDir);
  const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
  try {
    const r = await prewarmFile(file, {
      signal,
      onReading: (bytes) =>
        logger.info({ file, mb: mb(bytes) }, 'reading the store file into the OS cache, in the background'),
    });
    const fields = { file, mb: mb(r.fileBytes), ms: Math.round(r.ms) };
    if (r.outcome === 'read') logger.info(fields, 'store file read into the OS cache');
    else if (r.outcome === 'too-large')
      logger.info(fields, 'store file larger than half the available memory: not read into the OS cache');
    else logger.debug({ ...fields, outcome: r.outcome }, 'store file not read into the OS cache');
  } catch (err) {
    logger.warn(
      { err, file },
      'reading the store file into the OS cache failed; requests read it as they need it',
    );
  }
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`Invalid configuration: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

// Whatever the service writes (store, stored objects, credentials) is for its owner only.
process.umask(0o077);

if (cluster.isPrimary) {
  supervise(config).catch((err: unknown) => {
    console.error(`Start-up failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
} else {
  serve(config, process.env[PREPARES] === '1').catch(async (err: unknown) => {
    // The primary reports it (once for all workers) and stops the start-up.
    await tell({ kind: 'start-failed', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
}
