/**
 * Chooses the DocumentStore adapter from config: MongoDB when MONGO_URL is set, embedded SQLite otherwise.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DocumentStore } from './port.ts';
import { SqliteDocumentStore } from './sqlite/index.ts';
import { embeddedStoreFile } from './store-file.ts';

export async function openStore(config: Config, logger: Logger): Promise<DocumentStore> {
  if (config.mongoUrl) {
    const { openMongoStore } = await import('./mongo/index.ts');
    return openMongoStore(config, logger);
  }
  const file = embeddedStoreFile(config.dataDir);
  const store = new SqliteDocumentStore({
    file,
    databaseName: config.mongoDb,
    onSweepError: (err) =>
      logger.warn({ err }, 'embedded store: sweeping old change-log rows failed; the next sweep tries again'),
  });
  logger.info({ file }, 'embedded SQLite store open');
  return store;
}
