/**
 * Process entry: read config, build the services (src/services.ts), build the app, listen, shut
 * down cleanly.
 * With `WORKERS` > 1 the primary prepares the shared state once (demo data, accounts, signing
 * keys), then forks that many server processes sharing the port; the stores are shared, so
 * page tokens, cursors, sessions and tokens work across them.
 */
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { createLogger } from './logger.ts';
import { loadConfig, ConfigError, publicUrlWarning, type Config } from './config.ts';
import { answerClientErrors, buildApp } from './app.ts';
import { openServices } from './services.ts';
import { compileSchema } from './validation/index.ts';

async function serve(config: Config, prepared: boolean): Promise<void> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, grouped: true });
  const services = await openServices(config, logger, { prepareData: !prepared });
  const app = buildApp(services);
  services.start();
  // The schema's validators are compiled on first use, holding the event loop for seconds: compile
  // them before serving, so the first validation, submission or update does not stall the others.
  const compiling = performance.now();
  compileSchema();
  logger.info({ ms: Math.round(performance.now() - compiling) }, 'NMDC schema validators compiled');
  const server: Server = app.listen(config.port, config.host, () => {
    const docs = config.publicUrlIsDefault ? `http://localhost:${config.port}` : config.publicUrl;
    logger.info({ port: config.port, host: config.host }, `listening; docs at ${docs}/docs`);
    const warning = publicUrlWarning(config);
    if (warning) logger.warn(warning);
    logger.flush();
  });
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server);

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
    // Node keeps a connection open after the response to a request that was in flight (keep-alive):
    // close each one as soon as it is idle, so the process exits once the last response is sent.
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    idle.unref();
    server.close(() => {
      clearInterval(idle);
      services.stop().then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'stopping the services failed');
          process.exit(1);
        },
      );
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
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
/**
 * Shared state every worker expects to find (demo data, accounts, signing keys, the workflow
 * catalog), created once by building the services in the primary, so that workers never race to
 * create it.
 */
async function prepareShared(config: Config): Promise<void> {
  const services = await openServices(
    config,
    createLogger({ level: config.logLevel, format: config.logFormat }),
    { prepareData: true },
  );
  await services.stop();
}

/** Forks the workers, replaces any that dies, and passes SIGTERM/SIGINT on to them. */
async function supervise(config: Config): Promise<void> {
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  await prepareShared(config);
  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'server process died; starting another');
    fork();
  });
  for (let i = 0; i < config.workers; i++) fork();
  logger.info({ workers: config.workers }, 'server processes started');
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const run =
  config.workers > 1 && cluster.isPrimary
    ? supervise(config)
    : // Workers are forked only by `supervise`, after it prepared the shared state.
      serve(config, cluster.isWorker);
run.catch((err) => {
  console.error(`Start-up failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
