/**
 * Continuation state for cursor paging (`cursor=`), schema-endpoint page tokens (`page_token=`)
 * and `/queries:run` cursors. Kept in the source of truth's state store so every server process
 * can continue any continuation, and expiring after a period of inactivity.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { StateStore } from '../store/port.ts';
import { Unprocessable } from '../errors.ts';

export type ContinuationKind = 'find-cursor' | 'page-token' | 'query-cursor';

/** Seconds a continuation stays valid after its last use. */
export const CONTINUATION_TTL_SECONDS: Record<ContinuationKind, number> = {
  'find-cursor': 30 * 60,
  'page-token': 30 * 60,
  'query-cursor': 60 * 60,
};

export function newContinuationKey(): string {
  return randomBytes(18).toString('base64url');
}

export async function saveContinuation<T>(
  state: StateStore,
  kind: ContinuationKind,
  value: T,
): Promise<string> {
  const key = newContinuationKey();
  await state.put(kind, key, value, CONTINUATION_TTL_SECONDS[kind]);
  return key;
}

/** Keys this process derives for continuations, unguessable by anyone without it. */
const PROCESS_KEY_SALT = randomBytes(32);
/** Per state store, the continuations this process saved in it lately, by key: when each was written. */
const recentlySaved = new WeakMap<StateStore, Map<string, number>>();
const RECENTLY_SAVED_MAX = 50_000;

/**
 * Saves a continuation under a key derived from what it continues (keyed by a secret of this
 * process), so that asking for the same page again (a client polling a listing's first page)
 * answers the same token without writing it again while it has at least half its lifetime left.
 */
export async function saveContinuationOnce<T>(
  state: StateStore,
  kind: ContinuationKind,
  value: T,
  now: number = Date.now(),
): Promise<string> {
  const key = createHmac('sha256', PROCESS_KEY_SALT)
    .update(kind)
    .update('\u0000')
    .update(JSON.stringify(value))
    .digest('base64url')
    .slice(0, 24);
  const ttlSeconds = CONTINUATION_TTL_SECONDS[kind];
  let saved = recentlySaved.get(state);
  if (!saved) recentlySaved.set(state, (saved = new Map()));
  const savedAt = saved.get(key);
  if (savedAt !== undefined && now - savedAt < (ttlSeconds * 1000) / 2) return key;
  await state.put(kind, key, value, ttlSeconds);
  if (saved.size >= RECENTLY_SAVED_MAX) saved.clear();
  saved.set(key, now);
  return key;
}

export async function loadContinuation<T>(
  state: StateStore,
  kind: ContinuationKind,
  key: string,
): Promise<T | undefined> {
  if (!/^[\w-]{1,64}$/.test(key)) return undefined;
  return state.get<T>(kind, key);
}

/**
 * The most records one page of a listing holds (`max_page_size`); a size below 1 asks for every
 * matching record in one page, allowed while they are at most this many. Larger answers are paged
 * with `next_page_token`, or streamed whole by `GET /export/{collection_name}`.
 */
export const MAX_PAGE_SIZE = 100_000;

const PAGING_INSTEAD = `page through them with max_page_size up to ${MAX_PAGE_SIZE} and next_page_token`;

/** What to do instead of a larger page: paging, and for a collection its export. */
export function largerPageInstead(collection?: string): string {
  return collection
    ? `${PAGING_INSTEAD}, or stream them all with GET /export/${collection} (NDJSON, JSON, CSV or TSV)`
    : PAGING_INSTEAD;
}

/** Refuses a `max_page_size` above the ceiling (422 saying what to use instead). */
export function checkMaxPageSize(size: number, instead: string = PAGING_INSTEAD): void {
  if (size > MAX_PAGE_SIZE)
    throw new Unprocessable(`max_page_size must be at most ${MAX_PAGE_SIZE} (got ${size}); ${instead}`);
}

/** The refusal of an every-record page (`max_page_size` below 1) when more records match than a page holds. */
export function tooManyForOnePage(instead: string = PAGING_INSTEAD): Unprocessable {
  return new Unprocessable(
    `More than ${MAX_PAGE_SIZE} records match, more than one page holds (max_page_size below 1 asks for all of them); ${instead}`,
  );
}
