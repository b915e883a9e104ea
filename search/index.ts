/**
 * Chooses the SearchIndex adapter from config: Elasticsearch when ELASTICSEARCH_URL is set,
 * SQLite FTS5 in the embedded store's file otherwise.
 */
import type { Logger } from 'pino';
import type { Config } from '../src/config.ts';
import type { DocumentStore } from '../src/store/port.ts';
import type { SearchIndex } from './port.ts';

export async function openSearchIndex(_config: Config, _store: DocumentStore, _logger: Logger): Promise<SearchIndex> {
  throw new Error('not built yet');
}
