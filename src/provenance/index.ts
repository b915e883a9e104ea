/**
 * Chooses the edge index adapter from the store: tables in the embedded store's file (kept in
 * step by its write hook), or collections beside MongoDB's records (caught up from the change
 * log). A store that predates the edge index gets its edges built once, on open.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DocumentStore } from '../store/port.ts';
import { isHookable } from '../../search/index.ts';
import { keepCaughtUp, reindexCollections } from '../../search/maintenance.ts';
import type { EdgeIndex } from './port.ts';
import { SqliteEdgeIndex } from './sqlite/edge-index.ts';

export type { EdgeIndex } from './port.ts';

export interface OpenEdgeIndexOptions {
  /** How often an index written outside the store's transaction catches up (0: never). */
  catchUpEveryMs?: number;
}

/** An adapter that remembers whether its edges were built for the records already stored. */
interface BuiltOnce extends EdgeIndex {
  covers(collection: string): boolean;
  isBuilt(): boolean | Promise<boolean>;
  markBuilt(): void | Promise<void>;
}

async function buildOnce(index: BuiltOnce, store: DocumentStore, logger: Logger): Promise<void> {
  if (await index.isBuilt()) return;
  const collections = (await store.nonEmptyCollections()).filter((c) => index.covers(c));
  if (collections.length > 0) {
    const started = performance.now();
    const results = await reindexCollections(store, index, collections);
    logger.info(
      {
        records: results.reduce((n, r) => n + r.records, 0),
        seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      },
      'built the provenance edge index for the records already stored',
    );
  }
  await index.markBuilt();
}

export async function openEdgeIndex(
  _config: Config,
  store: DocumentStore,
  logger: Logger,
  options: OpenEdgeIndexOptions = {},
): Promise<EdgeIndex> {
  const everyMs = options.catchUpEveryMs ?? 2000;
  if (isHookable(store)) {
    const index = SqliteEdgeIndex.attachTo(store);
    await buildOnce(index, store, logger);
    return index;
  }
  // Loaded only for a MongoDB store: the driver is a large module graph.
  const { MongoDocumentStore } = await import('../store/mongo/document-store.ts');
  if (store instanceof MongoDocumentStore) {
    const { MongoEdgeIndex } = await import('./mongo/edge-index.ts');
    // Versioned writes on a replica set (several processes catch up at once).
    const index = new MongoEdgeIndex(store.database, {
      client: store.transactionClient,
      policy: store.limits.policy,
      maxTimeMS: store.limits.maxTimeMS,
    });
    await index.init();
    await buildOnce(index, store, logger);
    logger.info('provenance edge index in MongoDB beside the records');
    return keepCaughtUp(index, store, logger, everyMs);
  }
  throw new Error(`no edge index adapter for the ${store.engine} store`);
}
