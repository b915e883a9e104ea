/**
 * The embedded store's writing thread (src/store/sqlite/write-thread.ts): opens the store file on
 * a connection of its own with the same write hooks as the service's store (the FTS5 search index
 * and the provenance edges, as `openAdapters` attaches them), and serves the atomic writes the
 * main thread hands it.
 */
import { workerData } from 'node:worker_threads';
import { SqliteDocumentStore } from './store/sqlite/index.ts';
import { serveWrites, type WriteThreadData } from './store/sqlite/write-thread.ts';
import { FtsSearchIndex } from '../search/sqlite/fts-index.ts';
import { SqliteEdgeIndex } from './provenance/sqlite/edge-index.ts';
import { inGraph } from './provenance/edges.ts';

const { file } = workerData as WriteThreadData;
// No sweep here: the main thread's store sweeps.
const store = new SqliteDocumentStore({ file, sweepIntervalMs: 0 });
const search = FtsSearchIndex.attachTo(store);
SqliteEdgeIndex.attachTo(store);
// The staged texts go on to the search index's workers as the thread was given them, joined;
// from the same parse the workers prepare the store's part of the records, and their edges.
serveWrites(
  store,
  (collection, texts, joined) =>
    search.covers(collection)
      ? [search.prepareAhead(collection, texts, joined, { graph: inGraph(collection) })]
      : [],
  () => search.warmPreparers(),
);
