/**
 * The engines behind the ports, chosen from the config in this one place: MongoDB and
 * Elasticsearch when their URLs are set, else the embedded SQLite file (documents, FTS5 search
 * index and edges). The composition root (src/services.ts) and the command-line tools open them here.
 */
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { DocumentStore } from './store/port.ts';
import { openStore } from './store/index.ts';
import type { SearchIndex } from '../search/port.ts';
import { openSearchIndex } from '../search/index.ts';
import type { EdgeIndex } from './provenance/port.ts';
import { openEdgeIndex } from './provenance/index.ts';
import { SqliteDocumentStore } from './store/sqlite/index.ts';
import { FtsSearchIndex } from '../search/sqlite/fts-index.ts';
import { SqliteEdgeIndex } from './provenance/sqlite/edge-index.ts';

/** The engines behind the ports: the source of truth, the search index and the provenance edges. */
export interface Adapters {
  store: DocumentStore;
  searchIndex: SearchIndex;
  /** The provenance graph's edges. */
  edgeIndex: EdgeIndex;
}

/**
 * Opens the adapters the config names: MongoDB and Elasticsearch when their URLs are set, else
 * SQLite.
 */
export async function openAdapters(
  config: Config,
  logger: Logger,
  /** How often indexes written outside the store's transaction catch up (0: never, for maintenance). */
  options: { catchUpEveryMs?: number } = {},
): Promise<Adapters> {
  const store = await openStore(config, logger);
  const searchIndex = await openSearchIndex(config, store, logger, options);
  const edgeIndex = await openEdgeIndex(config, store, logger, options);
  const adapters = { store, searchIndex, edgeIndex };
  offloadLargeWrites(config, adapters);
  return adapters;
}

/**
 * Gives the embedded store its writing thread (`WRITE_THREAD`), which attaches the embedded
 * search and edge indexes' write hooks: only where this store has exactly those. For adapters
 * opened one by one (the benches' in-process servers) as `openAdapters` opens them.
 */
export function offloadLargeWrites(config: Config, { store, searchIndex, edgeIndex }: Adapters): void {
  if (
    config.writeThread &&
    store instanceof SqliteDocumentStore &&
    searchIndex instanceof FtsSearchIndex &&
    searchIndex.synchronous &&
    edgeIndex instanceof SqliteEdgeIndex
  )
    store.offloadAtomicWrites({
      entry: new URL('./write-thread.ts', import.meta.url),
      nice: config.writeThreadNice,
    });
}

/**
 * Starts the embedded store's writing thread, if it has one and it is not started, ahead of a large
 * write: the service does this as a large body begins to be read, so a first submission does not
 * wait for the thread to load. (Started as the server starts listening, the threads' loading held
 * back the first second of requests: 345 of 1,000 over 100 ms in `npm run bench:load`.)
 */
export async function warmLargeWrites({ store }: Pick<Adapters, 'store'>): Promise<void> {
  if (store instanceof SqliteDocumentStore) await store.warmWriteThread();
}
