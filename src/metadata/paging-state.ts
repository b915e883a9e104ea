/**
 * Continuation state for cursor paging (`cursor=`), schema-endpoint page tokens (`page_token=`)
 * and `/queries:run` cursors. Kept in the source of truth's state store so every server process
 * can continue any continuation, and expiring after a period of inactivity.
 */
import { randomBytes } from 'node:crypto';
import type { StateStore } from '../store/port.ts';

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

export async function loadContinuation<T>(
  state: StateStore,
  kind: ContinuationKind,
  key: string,
): Promise<T | undefined> {
  if (!/^[\w-]{1,64}$/.test(key)) return undefined;
  return state.get<T>(kind, key);
}
