/**
 * Chooses the SearchIndex adapter from config: Elasticsearch when ELASTICSEARCH_URL is set,
 * SQLite FTS5 otherwise — inside the embedded store's file (kept in step by its write hook),
 * or in a file of its own beside a MongoDB store.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type { Config } from '../src/config.ts';
import type { DocumentStore } from '../src/store/port.ts';
import { preparePrivateDatabaseFile } from '../src/store/private-files.ts';
import type { SearchIndex } from './port.ts';
import { FtsSearchIndex, type HookableStore } from './sqlite/fts-index.ts';
import { ElasticsearchIndex } from './elasticsearch/elasticsearch-index.ts';
import { originsOf } from './elasticsearch/client.ts';
import { keepCaughtUp } from './maintenance.ts';

export function isHookable(store: DocumentStore): store is DocumentStore & HookableStore {
  const s = store as Partial<HookableStore>;
  return typeof s.addWriteHook === 'function' && s.db !== undefined;
}

export interface OpenSearchIndexOptions {
  /**
   * How often an index written outside the store's transaction catches up with the store's
   * change log (0: never; the maintenance commands use 0 so they observe the index as it is).
   */
  catchUpEveryMs?: number;
}

export async function openSearchIndex(
  config: Config,
  store: DocumentStore,
  logger: Logger,
  options: OpenSearchIndexOptions = {},
): Promise<SearchIndex> {
  const everyMs = options.catchUpEveryMs ?? 2000;
  if (config.elasticsearchUrl) {
    const index = await ElasticsearchIndex.connect(
      {
        url: config.elasticsearchUrl,
        prefix: config.elasticsearchIndexPrefix,
        apiKey: config.elasticsearchApiKey,
        caCert: config.elasticsearchCaCert,
        caFingerprint: config.elasticsearchCaFingerprint,
      },
      { logger, bulkBytes: config.elasticsearchBulkBytes },
    );
    logger.info(
      { url: originsOf(config.elasticsearchUrl), prefix: config.elasticsearchIndexPrefix },
      'Elasticsearch search index',
    );
    return keepCaughtUp(index, store, logger, everyMs);
  }
  if (isHookable(store)) {
    logger.info('embedded FTS5 search index in the store file');
    return FtsSearchIndex.attachTo(store);
  }
  const file = path.join(config.dataDir, 'search-index.sqlite');
  preparePrivateDatabaseFile(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536'); // 64 MiB page cache, as the embedded store's
  logger.info({ file }, 'embedded FTS5 search index in its own file');
  return keepCaughtUp(new FtsSearchIndex(db, { hooked: false, ownsDatabase: true }), store, logger, everyMs);
}
