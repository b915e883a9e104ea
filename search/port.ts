/**
 * The search index: answers `.search` and `$regex` predicates with candidate ids, a provable
 * SUPERSET of the true matches. The source of truth always makes the final decision.
 * Two adapters: Elasticsearch (`elasticsearch/`) and embedded SQLite FTS5 (`sqlite/`).
 */
import type { Doc } from '../src/store/port.ts';

/** A predicate the index can narrow. `path` is a dotted attribute path (MongoDB semantics). */
export type IndexablePredicate =
  | { kind: 'search'; path: string; text: string }
  | { kind: 'regex'; path: string; pattern: string; flags: string };

/** Candidate ids, or ALL when the index cannot narrow (the caller scans). */
export type Candidates = { all: true } | { all: false; ids: Set<string> };

export interface SearchIndex {
  readonly engine: 'sqlite-fts5' | 'elasticsearch';
  index(collection: string, docs: Doc[]): Promise<void>;
  remove(collection: string, ids: string[]): Promise<void>;
  /** Candidates for one predicate; `limit` lets the index give up (ALL) when the set is too large to help. */
  candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates>;
  /** Drop everything for a collection (reindex). */
  clear(collection: string): Promise<void>;
  /** Every indexed id of a collection with its content fingerprint (check-index). */
  fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>>;
  close(): Promise<void>;
}
