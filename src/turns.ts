/**
 * Long work on the event loop in turns, so that other requests are answered meanwhile: better-sqlite3
 * and JSON are synchronous, and one call over 10^5 records holds the process for its whole length.
 */

/** Longest stretch work keeps the event loop before it lets other requests run, ms. */
export const TURN_MS = 10;

/** Resolves in the next turn of the event loop, after the I/O waiting now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
