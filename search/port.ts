/**
 * The search index: answers `.search` and `$regex` predicates with candidate ids, a provable
 * SUPERSET of the true matches. The source of truth always makes the final decision.
 * Two adapters: Elasticsearch (`elasticsearch/`) and embedded SQLite FTS5 (`sqlite/`).
 */
import type { Doc } from '../src/store/port.ts';

/**
 * A predicate the index can narrow. `path` is a dotted attribute path (MongoDB semantics).
 * `search` is a case-insensitive substring; `words` asks for every word of `text` as a whole
 * word of the value (the word rule of `search/words.ts`).
 */
export type IndexablePredicate =
  | { kind: 'search'; path: string; text: string }
  | { kind: 'regex'; path: string; pattern: string; flags: string }
  | { kind: 'words'; path: string; text: string };

/** Candidate ids, or ALL when the index cannot narrow (the caller scans). */
export type Candidates = { all: true } | { all: false; ids: Set<string> };

/** How a write to an index kept outside the store's transaction relates to the change log. */
export interface IndexWrite {
  /**
   * A change sequence the records are at least as new as (the end of the change-log page they were
   * read after, or where a rebuild began). An index that keeps versions (Elasticsearch) never lets
   * a write with a lower version replace one with a higher version, so catch-ups in several
   * processes cannot put an older state back.
   */
  version?: number;
  /** The write fills the rebuild begun with `beginRebuild`, not the index searches read now. */
  rebuild?: boolean;
}

/**
 * Up to where an index written outside the store's transaction is known to be complete for a
 * collection, read at one moment: every write after `since` may be missing, and so may the
 * records in `missing` (ones the engine refused). Searches add both to the index's candidates.
 */
export interface Freshness {
  since: number;
  missing: string[];
}

/** A record the index's engine refused for good (a size or mapping limit): it stays a candidate. */
export interface IndexRefusal {
  collection: string;
  id: string;
  status: number;
  type: string;
  reason: string;
  /** When it was refused (ISO 8601). */
  at: string;
}

/**
 * An index derived from the records and kept in step with them: written in the store's own
 * transaction (`synchronous`) or caught up from its change log; rebuilt by `npm run reindex` and
 * compared by `npm run check-index` (`maintenance.ts`). The search index and the provenance edge
 * index are both one.
 */
/** Index work started ahead of a write (`MaintainedIndex.prepareAhead`). */
export interface PreparedAhead {
  /** Settles (never rejects) once the work is done or has failed. */
  ready: Promise<void>;
  release(): void;
}

export interface MaintainedIndex {
  /**
   * True when the index is written inside the records' own write transaction, so it is never
   * behind the source of truth and the planner need not add recent writes to candidates.
   */
  readonly synchronous: boolean;
  /** Optional: false for a collection the index keeps nothing of (maintenance skips it). */
  covers?(collection: string): boolean;
  index(collection: string, docs: Doc[], write?: IndexWrite): Promise<void>;
  /**
   * Optional: index records given as their stored JSON text, as a rebuild reads them
   * (`DocumentStore.scanTexts`). Calls may overlap; they take effect in the order made.
   */
  indexTexts?(collection: string, texts: string[]): Promise<void>;
  /**
   * Optional, for an index written by the store's write hook: starts the part of indexing
   * records that needs no database on worker threads, ahead of the write that will hand the hook
   * exactly these texts (each record's stored JSON, in the order written). The hook then uses the
   * prepared batch once it is ready, and prepares the batch itself otherwise (so answers never
   * depend on it). `release` forgets the batch (written, or the write was abandoned).
   */
  prepareAhead?(
    collection: string,
    texts: string[],
    /** The texts joined by commas and each one's length, when the caller has them so. */
    joined?: { joined: string; lengths: Int32Array },
  ): PreparedAhead;
  remove(collection: string, ids: string[], write?: IndexWrite): Promise<void>;
  /** Drop everything for a collection (reindex). */
  clear(collection: string): Promise<void>;
  /**
   * Optional rebuild mode, replacing `clear`: the index may keep a collection's entries and make
   * each record given since `beginRebuild` exact. `endRebuild` is always called, also after a
   * failure; when `completed`, entries of records not given since (and not written since) go.
   */
  beginRebuild?(collection: string): Promise<void>;
  endRebuild?(collection: string, completed: boolean): Promise<void>;
  /** Every indexed id of a collection with its content fingerprint (check-index). */
  fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>>;
  /** The store change sequence up to which every write is known to be indexed (0: none). */
  watermark(): Promise<number>;
  /**
   * Optional: the watermark for one collection together with the records the index lacks beyond
   * it, read at once (without it: the watermark and nothing more). Never later than `watermark`.
   */
  freshness?(collection: string): Promise<Freshness>;
  /** Optional: the records the engine refused, as `check-index` reports them. */
  refusals?(): Promise<IndexRefusal[]>;
  setWatermark(seq: number): Promise<void>;
  close(): Promise<void>;
}

export interface SearchIndex extends MaintainedIndex {
  readonly engine: 'sqlite-fts5' | 'elasticsearch';
  /** Candidates for one predicate; `limit` lets the index give up (ALL) when the set is too large to help. */
  candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates>;
}
