/**
 * `_bulk` writes split by bytes and answered per item.
 *
 * Elasticsearch refuses a request body over `http.max_content_length` (100 MB by default) with a
 * 413 and recommends bulk requests of a few megabytes, so operations are sent in chunks of at most
 * `maxBytes` of NDJSON (a chunk that still meets a 413, on a cluster configured lower, is halved).
 * Each item then succeeds or fails on its own:
 * - written, deleted, already absent, or a version conflict (the index holds a newer version of
 *   the record, written by another catch-up): done;
 * - 429 or 5xx (a full write queue, a shard relocating): retried with backoff, a bounded number of
 *   times, after which the whole write fails and the caller's watermark stays where it was;
 * - any other refusal (a mapping or size limit the record breaks): permanent, reported to the
 *   caller and not retried, so one record cannot hold back every write after it;
 * - a write alias that does not exist: MissingIndex, for the caller to decide (never a refusal).
 */
import type { Client } from '@elastic/elasticsearch';
import { SearchIndexUnavailable } from '../errors.ts';
import { describeError, statusOf } from './client.ts';

/** A write's alias (or index) does not exist: the index's state, not the record's. */
export class MissingIndex extends Error {
  constructor(readonly index: string) {
    super(`no index or alias [${index}]`);
    this.name = 'MissingIndex';
  }
}

export interface BulkOp {
  action: 'index' | 'delete';
  /** Target: an alias (writes require it to be one) or a concrete index. */
  index: string;
  id: string;
  /** External version (the change sequence); undefined: Elasticsearch's own versioning. */
  version?: number;
  document?: unknown;
}

export interface ItemFailure {
  status: number;
  type: string;
  reason: string;
}

export interface BulkOutcome {
  /** Operations that took effect (or found a newer version in place), with the concrete index. */
  done: Array<{ op: BulkOp; index: string }>;
  /** Operations Elasticsearch refused for good. */
  refused: Array<{ op: BulkOp; index: string; failure: ItemFailure }>;
}

export interface BulkOptions {
  /** Largest request body sent, in bytes. */
  maxBytes: number;
  /** Most operations in one request. Default 5,000. */
  maxOps?: number;
  /** Attempts for transient failures before giving up. Default 6. */
  attempts?: number;
  /** First backoff delay in ms, doubled each attempt (with jitter). Default 250. */
  backoffMs?: number;
}

interface Sized {
  op: BulkOp;
  lines: unknown[];
  bytes: number;
}

function linesOf(op: BulkOp): unknown[] {
  const meta: Record<string, unknown> = { _index: op.index, _id: op.id };
  if (op.version !== undefined) Object.assign(meta, { version: op.version, version_type: 'external' });
  if (op.action === 'index') return [{ index: { ...meta, require_alias: true } }, op.document];
  return [{ delete: meta }];
}

const ndjsonBytes = (lines: unknown[]) =>
  lines.reduce<number>((n, line) => n + Buffer.byteLength(JSON.stringify(line)) + 1, 0);

const TRANSIENT_STATUSES = new Set([429, 500, 502, 503, 504]);

function isTransientRequestError(err: unknown): boolean {
  const status = statusOf(err);
  return status === undefined || TRANSIENT_STATUSES.has(status);
}

function isDone(op: BulkOp, status: number, type: string | undefined): boolean {
  if (status >= 200 && status < 300) return true;
  // A delete of a record (or index) that is not there has nothing left to do.
  if (op.action === 'delete' && status === 404) return true;
  // The index holds this or a newer version: another process got there first.
  return status === 409 && type === 'version_conflict_engine_exception' && op.version !== undefined;
}

export class BulkWriter {
  private readonly maxOps: number;
  private readonly attempts: number;
  private readonly backoffMs: number;

  constructor(
    private readonly client: Client,
    private readonly options: BulkOptions,
  ) {
    this.maxOps = options.maxOps ?? 5000;
    this.attempts = options.attempts ?? 6;
    this.backoffMs = options.backoffMs ?? 250;
  }

  /** The requests `ops` are sent in: consecutive runs of at most maxBytes and maxOps. */
  chunks(ops: BulkOp[]): Sized[][] {
    const out: Sized[][] = [];
    let chunk: Sized[] = [];
    let bytes = 0;
    for (const op of ops) {
      const lines = linesOf(op);
      const sized = { op, lines, bytes: ndjsonBytes(lines) };
      if (chunk.length > 0 && (bytes + sized.bytes > this.options.maxBytes || chunk.length >= this.maxOps)) {
        out.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(sized);
      bytes += sized.bytes;
    }
    if (chunk.length > 0) out.push(chunk);
    return out;
  }

  async write(ops: BulkOp[]): Promise<BulkOutcome> {
    const outcome: BulkOutcome = { done: [], refused: [] };
    for (const chunk of this.chunks(ops)) await this.send(chunk, outcome);
    return outcome;
  }

  private async pause(attempt: number): Promise<void> {
    const delay = this.backoffMs * 2 ** attempt;
    await new Promise((r) => setTimeout(r, delay / 2 + (Math.random() * delay) / 2));
  }

  private async send(chunk: Sized[], outcome: BulkOutcome): Promise<void> {
    let pending = chunk;
    for (let attempt = 0; pending.length > 0; attempt++) {
      let items: any[];
      try {
        const res = await this.client.bulk({ operations: pending.flatMap((s) => s.lines) });
        items = res.items;
      } catch (err) {
        if (statusOf(err) === 413) {
          // The cluster takes less than we sent: halve the request, down to one record.
          if (pending.length === 1) {
            const { op } = pending[0]!;
            outcome.refused.push({
              op,
              index: op.index,
              failure: {
                status: 413,
                type: 'request_entity_too_large',
                reason: `the record's bulk request (${pending[0]!.bytes} bytes) is larger than the cluster's http.max_content_length`,
              },
            });
            return;
          }
          const half = Math.ceil(pending.length / 2);
          await this.send(pending.slice(0, half), outcome);
          await this.send(pending.slice(half), outcome);
          return;
        }
        if (!isTransientRequestError(err) || attempt + 1 >= this.attempts)
          throw new SearchIndexUnavailable(`Elasticsearch bulk request failed: ${describeError(err)}`, {
            cause: err,
          });
        await this.pause(attempt);
        continue;
      }
      const retry: Sized[] = [];
      let lastTransient: ItemFailure | undefined;
      pending.forEach((sized, i) => {
        const result = Object.values(items[i] ?? {})[0] as
          { status: number; _index?: string; error?: { type?: string; reason?: string } } | undefined;
        const status = result?.status ?? 500;
        const index = result?._index ?? sized.op.index;
        if (isDone(sized.op, status, result?.error?.type)) {
          outcome.done.push({ op: sized.op, index });
          return;
        }
        const failure = {
          status,
          type: result?.error?.type ?? 'unknown',
          reason: String(result?.error?.reason ?? 'no reason given').slice(0, 500),
        };
        // A missing write alias is the index's state, not the record's: never a refusal, and
        // retrying will not make it appear (an alias swap is atomic).
        if (status === 404 && failure.type === 'index_not_found_exception')
          throw new MissingIndex(sized.op.index);
        if (TRANSIENT_STATUSES.has(status)) {
          retry.push(sized);
          lastTransient = failure;
        } else outcome.refused.push({ op: sized.op, index, failure });
      });
      if (retry.length > 0 && attempt + 1 >= this.attempts)
        throw new SearchIndexUnavailable(
          `Elasticsearch kept failing ${retry.length} bulk item(s) after ${this.attempts} attempts: ${lastTransient!.status} ${lastTransient!.type}: ${lastTransient!.reason}`,
        );
      pending = retry;
      if (pending.length > 0) await this.pause(attempt);
    }
  }
}
