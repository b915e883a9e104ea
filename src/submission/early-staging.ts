/**
 * A large submission's records handed over while its body is still being read. The body of
 * `POST /metadata/json:submit` is parsed as its bytes come (json-in-turns.ts); once the caller is
 * known to be allowed to submit, its records are keyed, serialised and staged for the write as
 * they are parsed (the store's workers prepare their index entries meanwhile), and the write itself
 * is begun as soon as the last byte is in, while the last parts are still parsed. Without this the
 * write began only after the whole body was parsed: for 10^5 biosamples (142 MB) several seconds
 * in which the writing thread had nothing to do.
 *
 * The write is not begun while bytes are still coming: a slow upload would otherwise keep the
 * store's write lock for as long as it lasts.
 *
 * What was staged is used only if it is exactly the payload the route is given: the same records
 * (the very values parsed), in the same collections, in the same order. Anything else (a key the
 * body holds twice, a body parsed again after a piece failed, a top-level array) is released
 * and the submission takes its usual path.
 */
import type { JsonObserver } from '../json-stream.ts';

/** One collection's records, as the payload's writes are handed over (at most `batch` records). */
export interface StreamedWrite {
  collection: string;
  docs: Array<Record<string, unknown>>;
}

/**
 * The records of a body as it is parsed, as writes of at most `batch` records of one collection (an
 * async iterable that ends once the body is all parsed and fails if it is refused), and what was
 * told, to compare with the payload at the end.
 */
export class StreamedWrites implements JsonObserver, AsyncIterable<StreamedWrite> {
  /** Each array told, in body order: its member's key and every value told of it. */
  private readonly told: Array<{ key: string; array: number; values: unknown[] }> = [];
  private readonly queue: StreamedWrite[] = [];
  /** The last array's records not handed over yet (fewer than `batch`). */
  private pending: StreamedWrite | null = null;
  private state: 'reading' | 'ended' | 'failed' = 'reading';
  private wake: (() => void) | undefined;
  private bytesIn = false;
  private readonly whenBytesIn: Array<() => void> = [];

  constructor(
    private readonly batch: number,
    /** Called once if the body is refused or its reading given up (not after it ended). */
    private readonly onFail: () => void = () => {},
  ) {}

  elements(key: string | undefined, values: unknown[], array: number): void {
    if (this.state !== 'reading') return;
    // A top-level array is no Database payload: the route refuses it.
    if (key === undefined) return this.fail();
    let last = this.told[this.told.length - 1];
    if (last?.array !== array) {
      this.handOver();
      last = { key, array, values: [] };
      this.told.push(last);
    }
    for (const value of values) {
      last.values.push(value);
      (this.pending ??= { collection: key, docs: [] }).docs.push(value as Record<string, unknown>);
      if (this.pending.docs.length >= this.batch) this.handOver();
    }
    this.notify();
  }

  received(): void {
    this.bytesIn = true;
    for (const resolve of this.whenBytesIn.splice(0)) resolve();
  }

  end(): void {
    if (this.state !== 'reading') return;
    this.handOver();
    this.state = 'ended';
    this.notify();
  }

  abandon(): void {
    this.fail();
  }

  /** Gives up: the writes' iteration fails, and no payload matches. */
  fail(): void {
    if (this.state !== 'reading') return;
    this.state = 'failed';
    this.queue.length = 0;
    this.pending = null;
    this.notify();
    // Whoever waits for the last byte goes on, to find the writes failed.
    for (const resolve of this.whenBytesIn.splice(0)) resolve();
    this.onFail();
  }

  /** Resolves once every byte of the body has come, or the body failed. */
  allReceived(): Promise<void> {
    if (this.bytesIn || this.state === 'failed') return Promise.resolve();
    return new Promise((resolve) => this.whenBytesIn.push(resolve));
  }

  /** Queues the last array's pending records as a write. */
  private handOver(): void {
    if (this.pending) this.queue.push(this.pending);
    this.pending = null;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamedWrite> {
    for (;;) {
      const next = this.queue.shift();
      if (next) yield next;
      else if (this.state === 'ended') return;
      else if (this.state === 'failed') throw new Error('the body was refused or its reading given up');
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /**
   * Whether the body was all parsed and what was told is exactly `collections`: the payload's
   * collections in order, each with its records (the same values, in the same order).
   */
  matches(collections: Array<{ collection: string; records: readonly unknown[] }>): boolean {
    if (this.state !== 'ended' || collections.length !== this.told.length) return false;
    return collections.every(({ collection, records }, i) => {
      const told = this.told[i]!;
      return (
        told.key === collection &&
        told.values.length === records.length &&
        told.values.every((value, j) => value === records[j])
      );
    });
  }
}
