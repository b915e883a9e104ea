/**
 * What every part of the embedded store works through: the connection, its prepared statements,
 * the counters tests and benchmarks read, and the kept estimates of index conditions. The
 * SqliteDocumentStore makes one and hands it to the record reads, scans and page strategies.
 */
import type { Database as Db } from 'better-sqlite3';
import type { Doc } from '../port.ts';
import { RecordText } from '../../json-text.ts';
import type { AttributeKeys } from './attribute-index.ts';
import type { ConditionEstimates } from './attribute-plans.ts';
import type { PageStrategy } from './page-queries.ts';
import type { ReadThreads } from './read-threads.ts';
import type { StatementCache } from './statement-cache.ts';
import type { WalkCheckpoints } from './walk-checkpoints.ts';

/** Counters tests and benchmarks read to check that narrowing works. */
export interface SqliteStoreCounters {
  /** Record bodies parsed from JSON. */
  bodiesParsed: number;
  /** Sorted pages read off the sort key's attribute index. */
  sortedIndexWalks: number;
  /** Pages of sorted walks under conditions that started from a row found by an earlier page. */
  walkPositionsReused: number;
  /** Atomic writes the writing thread committed (write-thread.ts), held ones included. */
  writesOnThread: number;
  /**
   * Records the writing thread parsed itself: those it was not handed prepared
   * (prepared-records.ts), as staged records are.
   */
  recordsParsedOnThread: number;
  /** Atomic writes held open on the writing thread (`holdAtomically`) and then committed, or rolled back. */
  holdsFinished: number;
  holdsAborted: number;
  /** Statements of scans run on a reading thread (read-threads.ts). */
  readsOffLoop: number;
  /** How the last find read its page (unset before the first), for a planner's explain. */
  lastStrategy?: PageStrategy;
}

export interface StoreContext {
  readonly db: Db;
  readonly statements: StatementCache;
  readonly counters: SqliteStoreCounters;
  readonly estimates: ConditionEstimates;
  /** The attribute index's (collection, path) keys. */
  readonly keys: AttributeKeys;
  /** Rows sorted walks under a filter's conditions have found, by position. */
  readonly checkpoints: WalkCheckpoints;
  /** Threads that run a scan's larger statements off the event loop; none for a store in memory. */
  readonly readers?: ReadThreads;
}

export type Row = { id: string; body: string };

/** Records (or ids) one statement reads at a time, so a scan can stop early and take turns. */
export const CHUNK = 1000;

/** Parses a stored record body, counting it: parsing is what narrowing saves. */
export function parseBody(ctx: StoreContext, body: string): Doc {
  ctx.counters.bodiesParsed++;
  return JSON.parse(body) as Doc;
}

/**
 * A record handed out as its stored text (FindOptions.asText). Typed as a record for the drivers
 * of scans and pages, which read nothing but `id` of it; the caller that asked takes it as the
 * RecordText it is.
 */
export function recordText(id: string, body: string): Doc {
  return new RecordText(id, body) as unknown as Doc;
}
