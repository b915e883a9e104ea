/**
 * The service on the MongoDB stand-in (a replica set in process, mongo-standin.ts), with its
 * search and edge indexes opened on the same store and no background loops (catch-up, pruning):
 * what a test sees is what its requests did. `seed` writes the records before the indexes open.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import type { DocumentStore } from '../../src/store/port.ts';
import { storeOnClient } from '../../src/store/mongo/index.ts';
import { openSearchIndex } from '../../search/index.ts';
import type { StandInServer } from './mongo-standin.ts';
import { createTestApp, type TestApp } from './server.ts';

export interface StandInApp {
  app: TestApp;
  /** Closes the app, its indexes and its store, and removes their folder. */
  close(): Promise<void>;
}

export async function standInApp(
  server: StandInServer,
  env: Record<string, string>,
  seed: (store: DocumentStore) => Promise<unknown>,
): Promise<StandInApp> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-standin-app-'));
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent', DATA_DIR: dir });
  const logger = pino({ level: 'silent' });
  const store = await storeOnClient(server.client() as unknown as MongoClient, config, logger, 'stand-in', {
    pruneEveryMs: 0,
  });
  await seed(store);
  const searchIndex = await openSearchIndex(config, store, logger, { catchUpEveryMs: 0 });
  const edgeIndex = await openEdgeIndex(config, store, logger, { catchUpEveryMs: 0 });
  const app = await createTestApp(env, { adapters: { store, searchIndex, edgeIndex } });
  return {
    app,
    close: async () => {
      await app.close();
      await edgeIndex.close();
      await searchIndex.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
