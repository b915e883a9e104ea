/**
 * Reading threads of the embedded store: statements that may read many pages run on connections
 * of their own in worker threads, so that a file the OS has not cached (a restart, a store larger
 * than memory) holds a thread for the disk's time rather than the event loop. At 10^6 biosamples
 * on a cold file one range of a body-tested walk took 391-547 ms and the planner's sampling
 * 60-371 ms, each statement holding every other request that long.
 *
 * Scans are generators (id-order-scans.ts): a scan yields an `OffLoopRead`, its driver runs it on
 * a thread (`run`) and resumes the scan, which finds the rows there. A driver that cannot wait
 * (inside a transaction) passes it over, and the scan reads on its own connection, as it does
 * when a thread fails. Which statements go to a thread: `scanRows`; when a collection counts as
 * cold: `Warmth`. Sorted walks read their slices ahead on a thread (walk-prefixes.ts).
 */
import os from 'node:os';
import { JobThread } from '../../job-thread.ts';
import type { SqlParam, StatementCache } from './statement-cache.ts';

/** What a scan's reads use of the store (a part of its StoreContext). */
interface ReadingContext {
  readonly statements: StatementCache;
  readonly counters: { readsOffLoop: number };
  readonly readers?: ReadThreads;
}

interface Read {
  sql: string;
  params: SqlParam[];
  pluck: boolean;
}

/**
 * Rows a statement on the loop may read while the file answers from memory (a chunk of records,
 * 1.5 ms warm); a statement that reads more (a body test over a range of ids, which hands back
 * only the rows that pass) runs on a thread, where it costs 0.13 ms more and holds no request.
 */
export const ON_LOOP_ROWS = 1000;
/** Threads reading: a cold read waits on the disk, so two can overlap even on one core. */
const THREADS = Math.max(2, Math.min(4, os.availableParallelism()));
/** Page cache of each thread's connection, KiB (pages also come through the OS cache, mmap). */
const CACHE_KIB = 16_384;
/**
 * A statement on the loop that took longer than this, ms, while the process read pages from disk
 * (`pagesFromDisk`), found its collection cold (warm, the largest take 2-5 ms); its scans then
 * read on threads for COLD_SPELL_MS. One that was slow without reading from disk met a busy
 * machine (the other cores' work, a collection pause), which threads would only make busier.
 */
const COLD_MS = 30;
const COLD_SPELL_MS = 10_000;
/**
 * A statement of no more than ON_LOOP_ROWS rows that took less than this on a thread, ms, was
 * quick; one that took longer than COLD_MS was slow.
 */
const WARM_MS = 3;
/**
 * Quick statements on threads one after another that show a collection warm: WARM_STATEMENTS
 * that found records, or fewer that read WARM_ROWS.
 */
const WARM_STATEMENTS = 16;
const WARM_ROWS = 1000;
/** A thread idle this long is stopped, giving back its memory. */
const IDLE_MS = 60_000;

/**
 * Whether a collection's records are read from disk. A collection is taken as cold from the first
 * time it is asked about since the store opened (a restart reads from disk), for COLD_SPELL_MS or
 * until quick statements on threads have found its records WARM_STATEMENTS times or read WARM_ROWS
 * of them with no slow one between, whichever comes first; and for COLD_SPELL_MS after a statement
 * on the loop took longer than COLD_MS while pages were read from disk. By collection: the small
 * ones are read at start-up and warm long before a large one is. Not on one quick statement: the
 * pages a cold request has just read answer the next statement quickly (at 10^6 a listing's second
 * statement was quick, and the search after it then held the loop 820 ms). Meanwhile a warm
 * collection pays a thread's round trip (0.13 ms) a statement, and a sorted walk reads its slices
 * twice; so when a collection is first asked about, a thread reads a few of its records at random
 * places (`ReadThreads.probe`).
 */
class Warmth {
  /** Until when each collection counts as cold (performance.now()); none: not asked about yet. */
  private readonly coldUntil = new Map<string, number>();
  /** Collections in their first spell, with their quick statements in a row and the rows these read. */
  private readonly opening = new Map<string, { statements: number; rows: number }>();

  /** @param probe starts reading a few of a collection's records on a thread, as evidence. */
  constructor(private readonly probe: (collection: string) => void = () => undefined) {}

  cold(collection: string): boolean {
    let until = this.coldUntil.get(collection);
    if (until === undefined) {
      until = performance.now() + COLD_SPELL_MS;
      this.coldUntil.set(collection, until);
      this.opening.set(collection, { statements: 0, rows: 0 });
      this.probe(collection);
    }
    return performance.now() < until;
  }

  /** Ends a collection's first spell (`ReadThreads.probe` found it warm). */
  shownWarm(collection: string): void {
    if (!this.opening.delete(collection)) return;
    this.coldUntil.set(collection, 0);
  }

  /** True while a collection is in its first spell and no evidence has ended it. */
  inOpeningSpell(collection: string): boolean {
    return this.opening.has(collection);
  }

  /** A statement on the loop took `ms`; `fromDisk`: the process read pages from disk meanwhile. */
  tookOnLoop(collection: string, ms: number, fromDisk: boolean): void {
    if (ms <= COLD_MS || !fromDisk) return;
    this.coldUntil.set(collection, performance.now() + COLD_SPELL_MS);
    this.opening.delete(collection);
  }

  tookOnThread(collection: string, ms: number, rows: number): void {
    const q = this.opening.get(collection);
    // Between quick and slow (a busy machine, say): neither.
    if (!q || (ms >= WARM_MS && ms <= COLD_MS)) return;
    if (ms > COLD_MS) {
      q.statements = q.rows = 0;
      return;
    }
    if (rows === 0) return;
    q.statements++;
    q.rows += rows;
    if (q.statements < WARM_STATEMENTS && q.rows < WARM_ROWS) return;
    this.shownWarm(collection);
  }
}

export class ReadThreads {
  private closed = false;
  readonly warmth = new Warmth((collection) => void this.probe(collection));
  private readonly threads: Array<{
    thread: JobThread<Read, { rows: unknown[]; ms: number }>;
    pending: number;
  }>;

  constructor(file: string, count = THREADS) {
    this.threads = Array.from({ length: count }, (_, i) => ({
      // Plain JavaScript: the thread needs none of the process's loaders (`--import tsx`).
      thread: new JobThread<Read, { rows: unknown[]; ms: number }>(
        new URL('./read-worker.mjs', import.meta.url),
        { execArgv: [], workerData: { file, cacheKib: CACHE_KIB } },
        `the store's reading thread ${i + 1}`,
        IDLE_MS,
      ),
      pending: 0,
    }));
  }

  /** The rows of a read-only statement, run on the least busy thread. */
  async all(
    sql: string,
    params: SqlParam[],
    pluck = false,
    of?: { collection: string; reads: number },
  ): Promise<unknown[]> {
    const { rows, ms } = await this.timed(sql, params, pluck);
    if (of && of.reads <= ON_LOOP_ROWS) this.warmth.tookOnThread(of.collection, ms, rows.length);
    return rows;
  }

  /** The rows of a read-only statement and the time it took on its thread, ms. */
  private async timed(
    sql: string,
    params: SqlParam[],
    pluck: boolean,
  ): Promise<{ rows: unknown[]; ms: number }> {
    // A read after close (a probe under way) would start a thread again, holding the file open.
    if (this.closed) throw new Error('the store is closed');
    const t = this.threads.reduce((a, b) => (b.pending < a.pending ? b : a));
    t.pending++;
    try {
      return await t.thread.run({ sql, params, pluck });
    } finally {
      t.pending--;
    }
  }

  /**
   * Reads one record in each of WARM_STATEMENTS windows of 64 rows at random places of the
   * records' table while `collection` is in its first spell, and ends the spell when every read
   * was quick and at least half found a record of it: on a file the OS
   * holds that takes milliseconds, before the requests that found the collection cold have paid
   * much for it (a first filtered sorted page at 10^5: 35-38 ms with its slices read twice, 20 ms
   * without). One read that is not quick ends the probe with no evidence: on a cold file a page
   * takes 1-3 ms, and pages the OS read ahead would make some reads quick.
   */
  private async probe(collection: string): Promise<void> {
    try {
      const [last] = (await this.all('SELECT max(rowid) FROM docs', [], true)) as Array<number | null>;
      if (!last) return;
      let found = 0;
      for (let i = 0; i < WARM_STATEMENTS; i++) {
        const from = 1 + Math.floor(Math.random() * last);
        const { rows, ms } = await this.timed(
          'SELECT length(body) FROM docs WHERE rowid BETWEEN ? AND ? AND collection = ? LIMIT 1',
          [from, from + 63, collection],
          true,
        );
        if (ms >= WARM_MS || !this.warmth.inOpeningSpell(collection)) return;
        found += rows.length;
      }
      if (found >= WARM_STATEMENTS / 2) this.warmth.shownWarm(collection);
    } catch {
      // no evidence: the collection's own reads decide
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.thread.close()));
  }
}

/** A statement a scan asks its driver to run on a reading thread (see the top of this file). */
export class OffLoopRead {
  /** The rows, once a thread has read them. */
  rows: unknown[] | undefined;

  constructor(
    private readonly ctx: ReadingContext,
    readonly sql: string,
    readonly params: SqlParam[],
    private readonly of: { collection: string; reads: number },
  ) {}

  /** Runs the statement on a thread; a thread that fails leaves it to the scan's own connection. */
  async run(): Promise<void> {
    this.rows = await readOnThread(this.ctx, this.sql, this.params, false, this.of);
  }
}

/**
 * The rows of a read-only statement read on a thread; undefined when the store has no threads or
 * the thread failed (a file it cannot open, a thread that exited): the caller reads on the loop.
 */
export async function readOnThread(
  ctx: ReadingContext,
  sql: string,
  params: SqlParam[],
  pluck = false,
  of?: { collection: string; reads: number },
): Promise<unknown[] | undefined> {
  if (!ctx.readers) return undefined;
  try {
    const rows = await ctx.readers.all(sql, params, pluck, of);
    ctx.counters.readsOffLoop++;
    return rows;
  } catch {
    return undefined;
  }
}

/**
 * The rows of a scan's read-only statement that reads about `reads` rows of `collection`: on the
 * store's own connection while the collection answers from memory (a thread's round trip costs
 * 0.13 ms, and a thousand records cost 2.7 times as much through a thread as on the loop), on a
 * reading thread when the statement is larger than that or the collection is cold (`Warmth`),
 * where the driver runs what the scan yields.
 */
export function* scanRows(
  ctx: ReadingContext,
  sql: string,
  params: SqlParam[],
  of: { collection: string; reads: number },
): Generator<OffLoopRead, unknown[]> {
  const readers = ctx.readers;
  if (readers && (of.reads > ON_LOOP_ROWS || readers.warmth.cold(of.collection))) {
    const read = new OffLoopRead(ctx, sql, params, of);
    yield read;
    if (read.rows) return read.rows;
  }
  const took = onLoopTimer(readers, of.collection);
  const rows = ctx.statements.get(sql).all(...params);
  took();
  return rows;
}

/** How old the count of pages read from disk that a statement on the loop is set against may be, ms. */
const DISK_BASELINE_MS = 5;
let baselineAt = -Infinity;
let baseline = 0;

/**
 * Starts timing a statement on the loop; the function it returns, called when the statement has
 * run, tells the collection's warmth of a slow one. Asking the process what it has read from disk
 * (getrusage, summed over its threads) took 4-16 us in the server, twice for each of the 4-5
 * statements of a search's page. So the count before is one at most DISK_BASELINE_MS old, and the
 * count after is asked only of a statement slower than COLD_MS, the only kind Warmth takes note
 * of. Pages read in the few ms before such a statement count as its own: that errs toward reading
 * on threads while the file is being read from disk.
 */
export function onLoopTimer(readers: ReadThreads | undefined, collection: string): () => void {
  if (!readers) return () => undefined;
  const started = performance.now();
  if (started - baselineAt > DISK_BASELINE_MS) {
    baseline = pagesFromDisk();
    baselineAt = started;
  }
  const disk = baseline;
  return () => {
    const ms = performance.now() - started;
    if (ms > COLD_MS) readers.warmth.tookOnLoop(collection, ms, pagesFromDisk() > disk);
  };
}

/**
 * Pages the process has read from disk so far: through the store's memory map (major faults) and
 * by reads the OS cache did not answer. About a microsecond to ask.
 */
function pagesFromDisk(): number {
  const { majorPageFault, fsRead } = process.resourceUsage();
  return majorPageFault + fsRead;
}
