/**
 * Long work on the event loop in turns, so that other requests are answered meanwhile: better-sqlite3
 * and JSON are synchronous, and one call over 10^5 records holds the process for its whole length.
 *
 * Bulk work (what a large request body asks for: a submission's parsing, validation and
 * serialising) also gives way while other requests come: before each turn it waits a few times as
 * long as it has just worked, so it takes about a quarter of the event loop and leaves the CPU to
 * the requests (of this process and of the others on the machine) instead of an equal share.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Longest stretch work keeps the event loop before it lets other requests run, ms. */
export const TURN_MS = 10;

/** How long after a request came bulk work still gives way, ms. */
const RECENT_REQUEST_MS = 100;
/** While requests come, bulk work waits this many times as long as it worked before its next turn. */
const GIVE_WAY_RATIO = 3;
/** The longest one such wait, ms. */
const MOST_WAIT_MS = 30;

/** When a request that is no bulk work last came to this process (`performance.now()`). */
let requestCameAt = -Infinity;

/** The bulk work a chain of calls belongs to: when it last resumed after a turn. */
const bulkWork = new AsyncLocalStorage<{ resumedAt: number }>();

/** Notes that a request which is no bulk work came: bulk work gives way for a while. */
export function requestCame(): void {
  requestCameAt = performance.now();
}

/** Runs `fn` as bulk work: its turns (`nextTurn`, `Turns`, and what is built on them) give way. */
export function asBulkWork<T>(fn: () => T): T {
  return bulkWork.run({ resumedAt: performance.now() }, fn);
}

/**
 * How long bulk work that has just worked `workedMs` on the event loop waits before going on: 0
 * unless a request came within RECENT_REQUEST_MS, else GIVE_WAY_RATIO times as long, at most
 * MOST_WAIT_MS.
 */
export function giveWayMs(workedMs: number): number {
  const since = performance.now() - requestCameAt;
  if (!(since >= 0 && since <= RECENT_REQUEST_MS)) return 0;
  return Math.min(MOST_WAIT_MS, Math.max(0, workedMs) * GIVE_WAY_RATIO);
}

/** How often bulk work has given way, and for how long in all (ms). */
export const gaveWay = { times: 0, ms: 0 };

/**
 * Runs `fn` in a later turn of the event loop: after the I/O waiting now (setImmediate), or, in
 * bulk work that has just worked `workedMs`, after giving way (`giveWayMs`).
 */
export function inLaterTurn(workedMs: number, fn: () => void): void {
  const wait = bulkWork.getStore() === undefined ? 0 : giveWayMs(workedMs);
  if (wait === 0) {
    setImmediate(fn);
    return;
  }
  gaveWay.times++;
  gaveWay.ms += wait;
  setTimeout(fn, wait);
}

/**
 * Resolves in the next turn of the event loop, after the I/O waiting now; in bulk work, after it
 * has given way for the time since it last resumed (`inLaterTurn`).
 */
export function nextTurn(): Promise<void> {
  const bulk = bulkWork.getStore();
  if (!bulk) return new Promise((resolve) => setImmediate(resolve));
  return new Promise<void>((resolve) =>
    inLaterTurn(performance.now() - bulk.resumedAt, () => {
      bulk.resumedAt = performance.now();
      resolve();
    }),
  );
}

/** Turn-taking for long work done in small steps: `if (turns.due()) await turns.give()` between steps. */
export class Turns {
  private started = performance.now();

  due(): boolean {
    return performance.now() - this.started > TURN_MS;
  }

  async give(): Promise<void> {
    await nextTurn();
    this.restart();
  }

  /** Starts a new stretch: the work has just waited (for a thread, say) and others had their turn. */
  restart(): void {
    this.started = performance.now();
  }
}

/** `items.map(fn)`, `perTurn` items a turn. */
export async function mapInTurns<T, U>(
  items: readonly T[],
  perTurn: number,
  fn: (item: T) => U,
): Promise<U[]> {
  const out: U[] = [];
  for (let i = 0; i < items.length; i += perTurn) {
    if (i > 0) await nextTurn();
    for (const item of items.slice(i, i + perTurn)) out.push(fn(item));
  }
  return out;
}

/**
 * The size of the next step of work read in steps (rows, index entries), scaled after each step so
 * that a step takes about `stepMs`: at most twice the last (a step served from the cache says little
 * of the next, which may read the disk), within `least` and `most`. A fixed size suits either a warm
 * file or a cold one, not both.
 */
export class PacedSize {
  constructor(
    public size: number,
    private readonly stepMs: number,
    private readonly least: number,
    private readonly most: number,
  ) {}

  /** Scales the size after a step of the current size that took `ms`. */
  took(ms: number): void {
    const scaled = Math.min(2 * this.size, (this.size * this.stepMs) / Math.max(ms, 0.05));
    this.size = Math.round(Math.min(this.most, Math.max(this.least, scaled)));
  }
}

/** Bytes copied per turn by `concatInTurns`. */
const COPIED_PER_TURN = 8 * 1024 * 1024;

/**
 * `Buffer.concat(parts)`, copied COPIED_PER_TURN bytes or so a turn: one concat of 142 MB held the
 * event loop for 100-300 ms here.
 */
export async function concatInTurns(parts: Buffer[]): Promise<Buffer> {
  const total = parts.reduce((n, part) => n + part.length, 0);
  const whole = Buffer.allocUnsafe(total);
  let at = 0;
  let copied = 0;
  for (const part of parts) {
    part.copy(whole, at);
    at += part.length;
    copied += part.length;
    if (copied >= COPIED_PER_TURN) {
      copied = 0;
      await nextTurn();
    }
  }
  return whole;
}

/** The JSON text of an array of `items`, each mapped by `fn` first, `perTurn` items a turn. */
export async function jsonArrayInTurns<T>(
  items: readonly T[],
  perTurn: number,
  fn: (item: T) => unknown = (item) => item,
): Promise<string> {
  return `[${(await mapInTurns(items, perTurn, (item) => JSON.stringify(fn(item)))).join(',')}]`;
}
