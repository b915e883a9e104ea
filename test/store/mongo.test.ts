/**
 * The behaviour suite against a real MongoDB. Skipped unless MONGO_URL is set (no server runs
 * in the default test environment); each test gets a fresh database that is dropped after.
 */
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { describe } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openMongoStore } from '../../src/store/mongo/index.ts';
import { describeDocumentStore } from './behaviour.ts';

const url = process.env.MONGO_URL;

describe.skipIf(!url)('MongoDB (set MONGO_URL to run)', () => {
  describeDocumentStore('MongoDB', async () => {
    const name = `nmdc_test_${randomUUID().slice(0, 8)}`;
    const store = await openMongoStore(
      loadConfig({ MONGO_URL: url, MONGO_DB: name, LOG_LEVEL: 'silent' }),
      pino({ level: 'silent' }),
    );
    return {
      store,
      dispose: async () => {
        await store.close();
        const client = await MongoClient.connect(url!);
        await client.db(name).dropDatabase();
        await client.close();
      },
    };
  });
});
