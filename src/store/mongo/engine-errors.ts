/**
 * Which MongoDB errors are transient (an election, a step-down, a write conflict, a time limit, a
 * lost connection), and the store's own error for them: `StoreUnavailable`, which the API answers
 * with 503 and `Retry-After`. Everything else passes through unchanged.
 */
import { MongoError, MongoServerError } from 'mongodb';
import { StoreUnavailable } from '../../errors.ts';

type Reason = 'failover' | 'contention' | 'timeout' | 'unreachable';

/** Server error codes by what they mean for a caller (from MongoDB's error_codes.yml). */
const CODES: ReadonlyMap<number, Reason> = new Map([
  [6, 'unreachable'], // HostUnreachable
  [7, 'unreachable'], // HostNotFound
  [89, 'unreachable'], // NetworkTimeout
  [9001, 'unreachable'], // SocketException
  [133, 'unreachable'], // FailedToSatisfyReadPreference
  [91, 'failover'], // ShutdownInProgress
  [189, 'failover'], // PrimarySteppedDown
  [10107, 'failover'], // NotWritablePrimary
  [11600, 'failover'], // InterruptedAtShutdown
  [11602, 'failover'], // InterruptedDueToReplStateChange
  [13435, 'failover'], // NotPrimaryNoSecondaryOk
  [13436, 'failover'], // NotPrimaryOrSecondary
  [10058, 'failover'], // LegacyNotPrimary
  [13388, 'failover'], // StaleConfig (a chunk moved; mongos retries, but not forever)
  [150, 'failover'], // StaleEpoch
  [112, 'contention'], // WriteConflict
  [24, 'contention'], // LockTimeout
  [251, 'contention'], // NoSuchTransaction (aborted by the server, e.g. after a conflict)
  [50, 'timeout'], // MaxTimeMSExpired
  [262, 'timeout'], // ExceededTimeLimit
  [202, 'timeout'], // NetworkInterfaceExceededTimeLimit
  [64, 'timeout'], // WriteConcernFailed (wtimeout: a majority did not acknowledge in time)
]);

/** Driver errors (no server code) that mean the deployment could not be reached or answer in time. */
const DRIVER_ERRORS: ReadonlyMap<string, Reason> = new Map([
  ['MongoNetworkError', 'unreachable'],
  ['MongoNetworkTimeoutError', 'unreachable'],
  ['MongoServerSelectionError', 'unreachable'],
  ['MongoNotConnectedError', 'unreachable'],
  ['MongoTopologyClosedError', 'unreachable'],
  ['MongoOperationTimeoutError', 'timeout'],
]);

const LABELS: ReadonlyArray<[string, Reason]> = [
  ['TransientTransactionError', 'contention'],
  ['UnknownTransactionCommitResult', 'failover'],
  ['RetryableWriteError', 'failover'],
];

const DETAIL: Record<Reason, string> = {
  failover: 'The database is electing a new primary or stepping down; try again shortly',
  contention: 'The records are being written by other requests at the same time; try again shortly',
  timeout: 'The database did not answer within its time limit; try again shortly, or narrow the query',
  unreachable: 'The database cannot be reached; try again shortly',
};

/** Seconds a client should wait: an election takes about ten seconds, a conflict clears at once. */
const RETRY_AFTER: Record<Reason, number> = { failover: 5, contention: 1, timeout: 2, unreachable: 5 };

function reasonOf(err: unknown): Reason | undefined {
  if (!(err instanceof Error)) return undefined;
  if (err instanceof MongoError) {
    for (const [label, reason] of LABELS) if (err.hasErrorLabel(label)) return reason;
  }
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number' && CODES.has(code)) return CODES.get(code);
  // A write concern error carries its code inside.
  const wce = (err as { writeConcernError?: { code?: number } }).writeConcernError;
  if (wce?.code !== undefined && CODES.has(wce.code)) return CODES.get(wce.code);
  return DRIVER_ERRORS.get(err.name);
}

/** Whether an error in a transaction means: run the whole transaction again. */
export function isTransientTransactionError(err: unknown): boolean {
  return err instanceof MongoError && err.hasErrorLabel('TransientTransactionError');
}

/** Whether a failed commit may have committed: commit again (the server answers what became of it). */
export function isUnknownCommitResult(err: unknown): boolean {
  return (
    err instanceof MongoError &&
    err.hasErrorLabel('UnknownTransactionCommitResult') &&
    !(err instanceof MongoServerError && err.code === 50)
  );
}

/** Whether an error is transient (worth a retry by the caller). */
export function isTransient(err: unknown): boolean {
  return reasonOf(err) !== undefined;
}

/** The store's error for a transient engine error; any other error as it is. */
export function storeErrorOf(err: unknown): unknown {
  if (err instanceof StoreUnavailable) return err;
  const reason = reasonOf(err);
  if (reason === undefined) return err;
  return new StoreUnavailable(DETAIL[reason], RETRY_AFTER[reason], { cause: err });
}

/** Runs an engine operation, raising `StoreUnavailable` for a transient error. */
export async function engine<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    throw storeErrorOf(err);
  }
}
