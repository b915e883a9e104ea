/**
 * The embedded SQLite adapter of the DocumentStore port.
 */
export {
  SqliteDocumentStore,
  type WriteHook,
  type SqliteStoreOptions,
  type SqliteStoreCounters,
  type PageStrategy,
} from './document-store.ts';
export { INDEXED_PATHS } from './attribute-index.ts';
