/**
 * The MongoDB adapter of the DocumentStore port.
 */
import { MongoClient } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { COLLECTION_NAMES } from '../../schema/nmdc.ts';
import { MongoDocumentStore } from './document-store.ts';

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
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
  try {
    await client.connect();
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new Error(
      `cannot reach MongoDB at MONGO_URL (${describeUrl(url)}): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return storeOnClient(client, config, logger, describeUrl(url));
}

/** The store on a connected client (tests hand in a stand-in for the driver's). */
export async function storeOnClient(
  client: MongoClient,
  config: Config,
  logger: Logger,
  host = 'the configured address',
): Promise<MongoDocumentStore> {
  const db = client.db(config.mongoDb);
  const hello = (await db.admin().command({ hello: 1 })) as { setName?: string; msg?: string };
  const transactions = Boolean(hello.setName) || hello.msg === 'isdbgrid';
  const store = new MongoDocumentStore(db, client, { databaseName: config.mongoDb, transactions });
  await store.init(COLLECTION_NAMES);
  logger.info({ host, db: config.mongoDb, transactions }, 'MongoDB store open');
  return store;
}
