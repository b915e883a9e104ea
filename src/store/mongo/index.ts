/**
 * The MongoDB adapter of the DocumentStore port.
 */
import { MongoClient } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { COLLECTION_NAMES } from '../../schema/nmdc.ts';
import { MongoDocumentStore, type MongoStoreOptions } from './document-store.ts';

export {
  MongoDocumentStore,
  recordIndexSpecs,
  mongoProjection,
  CHANGES_COLLECTION,
  COUNTERS_COLLECTION,
} from './document-store.ts';
export { MongoStateStore, STATE_COLLECTION } from './state-store.ts';

/** The host part of a connection string, without credentials, for messages. */
function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return 'the configured address';
  }
}

export async function openMongoStore(config: Config, logger: Logger): Promise<MongoDocumentStore> {
  const url = config.mongoUrl!;
  // Majority acknowledgement for every write outside transactions too (a write a failover could
  // roll back is never acknowledged), bounded by the same time limit as operations.
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: 5000,
    writeConcern: { w: 'majority', wtimeoutMS: config.mongoMaxTimeMs },
    readPreference: 'primary',
    retryWrites: true,
    retryReads: true,
  });
  try {
    await client.connect();
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new Error(
      `cannot reach MongoDB at MONGO_URL (${describeUrl(url)}): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  try {
    return await storeOnClient(client, config, logger, describeUrl(url));
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}

/** The store on a connected client (tests hand in a stand-in for the driver's). */
export async function storeOnClient(
  client: MongoClient,
  config: Config,
  logger: Logger,
  host = 'the configured address',
  options: Partial<MongoStoreOptions> = {},
): Promise<MongoDocumentStore> {
  const db = client.db(config.mongoDb);
  const hello = (await db.admin().command({ hello: 1 })) as { setName?: string; msg?: string };
  const transactions = Boolean(hello.setName) || hello.msg === 'isdbgrid';
  if (!transactions && !config.mongoAllowStandalone) {
    throw new Error(
      `MongoDB at MONGO_URL (${host}) is a standalone server: it runs no transactions, so concurrent ` +
        'writes (job claims, runs, stored objects) could lose updates. Run a replica set (a single-node ' +
        'one will do: docs/SCALE-OUT.md), or set MONGO_ALLOW_STANDALONE=true to accept that risk.',
    );
  }
  if (!transactions) logger.warn({ host }, 'MongoDB is a standalone server: writes run without transactions');
  const store = new MongoDocumentStore(db, client, {
    databaseName: config.mongoDb,
    transactions,
    maxTimeMS: config.mongoMaxTimeMs,
    ...options,
  });
  await store.init(COLLECTION_NAMES);
  logger.info({ host, db: config.mongoDb, transactions }, 'MongoDB store open');
  return store;
}
