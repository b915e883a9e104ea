/**
 * Process entry: read config, open the stores, build the app, listen, shut down cleanly.
 */
import type { Server } from 'node:http';
import { pino } from 'pino';
import { loadConfig, ConfigError, type Config } from './config.ts';
import { buildApp } from './app.ts';
import { openStore } from './store/index.ts';
import { openSearchIndex } from '../search/index.ts';
import { prepareData } from './startup.ts';

async function main(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel });
  const store = await openStore(config, logger);
  const searchIndex = await openSearchIndex(config, store, logger);
  await prepareData({ config, store, searchIndex, logger });
  const built = await buildApp({ config, store, searchIndex, logger });
  const server: Server = built.app.listen(config.port, config.host, () => {
    logger.info({ port: config.port, host: config.host }, `listening; docs at ${config.publicUrl}/docs`);
  });
  server.keepAliveTimeout = 65_000;

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
    server.close(async () => {
      await built.close();
      await searchIndex.close();
      await store.close();
      logger.info('stopped');
      process.exit(0);
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
main(config).catch((err) => {
  console.error(`Start-up failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
