/**
 * Multi-document transactions with bounded retries. The driver's `withTransaction` retries a
 * transient error at once and for up to 120 s; under contention every retry collides again, and a
 * request waits two minutes before it fails. Here a transaction runs at most `attempts` times
 * within `budgetMs`, pausing between tries (exponential backoff with full jitter, so colliding
 * writers spread out), and then fails with the transient error, which the store reports as
 * `StoreUnavailable` (503 with Retry-After).
 *
 * Transactions read a snapshot and commit with a majority write concern, so what they read and
 * wrote survives a failover once acknowledged. Their operations run one after another: the
 * driver leaves parallel operations in one transaction undefined (NODE-6191).
 */
import type { ClientSession, MongoClient, TransactionOptions } from 'mongodb';
import { isTransientTransactionError, isUnknownCommitResult } from './engine-errors.ts';

export interface TransactionPolicy {
  /** Tries of the whole transaction, at most. */
  attempts: number;
  /** First pause between tries; it doubles each time, up to `maxDelayMs` (each pause is a random part of it). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No new try starts after this long. */
  budgetMs: number;
  /** Time limit of the commit (maxCommitTimeMS) and of a majority's acknowledgement (wtimeoutMS). */
  timeLimitMs: number;
}

export const DEFAULT_TRANSACTION_POLICY: TransactionPolicy = {
  attempts: 10,
  baseDelayMs: 5,
  maxDelayMs: 400,
  budgetMs: 10_000,
  timeLimitMs: 30_000,
};

export function transactionOptions(timeLimitMs: number): TransactionOptions {
  return {
    readConcern: { level: 'snapshot' },
    writeConcern: { w: 'majority', wtimeoutMS: timeLimitMs },
    readPreference: 'primary',
    maxCommitTimeMS: timeLimitMs,
  };
}

function pause(attempt: number, policy: TransactionPolicy): Promise<void> {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
}

/** Commits, committing again while the result is unknown; false when the whole transaction must run again. */
async function commit(
  session: ClientSession,
  policy: TransactionPolicy,
  mayRetry: () => boolean,
): Promise<boolean> {
  for (let tries = 1; ; tries++) {
    try {
      await session.commitTransaction();
      return true;
    } catch (err) {
      if (isUnknownCommitResult(err) && tries < 3 && mayRetry()) {
        await pause(tries, policy);
        continue;
      }
      if (isTransientTransactionError(err) && mayRetry()) return false;
      throw err;
    }
  }
}

/**
 * Runs `work` in a transaction and commits it; runs it again (after a pause) when the server
 * answers with a transient transaction error, within the policy's bounds. `work` may run more
 * than once and must issue its operations one after another.
 */
export async function runTransaction<T>(
  client: MongoClient,
  work: (session: ClientSession) => Promise<T>,
  policy: TransactionPolicy = DEFAULT_TRANSACTION_POLICY,
): Promise<T> {
  const session = client.startSession();
  const started = Date.now();
  try {
    for (let attempt = 1; ; attempt++) {
      const mayRetry = () => attempt < policy.attempts && Date.now() - started < policy.budgetMs;
      session.startTransaction(transactionOptions(policy.timeLimitMs));
      let result: T;
      try {
        result = await work(session);
      } catch (err) {
        if (session.inTransaction()) await session.abortTransaction().catch(() => undefined);
        if (isTransientTransactionError(err) && mayRetry()) {
          await pause(attempt, policy);
          continue;
        }
        throw err;
      }
      if (await commit(session, policy, mayRetry)) return result;
      await pause(attempt, policy);
    }
  } finally {
    await session.endSession().catch(() => undefined);
  }
}
