/**
 * The embedded store as the planner sees MongoDB, the store deployed beside Elasticsearch: no
 * samples to estimate from and no attribute index, so a search predicate asks the index first.
 * Tests of the scaled-out search path plan over this view.
 */
import type { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

export function asDeployed(store: SqliteDocumentStore): SqliteDocumentStore {
  return Object.assign(Object.create(store) as SqliteDocumentStore, {
    sampleTexts: undefined,
    conditionEstimates: undefined,
    countFromIndex: undefined,
  });
}
