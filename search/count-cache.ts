/**
 * Remembers exact match counts of recent filters. Counting a broad text search means verifying
 * every match, and every page of the same query asks again; the count only changes when a record
 * of that collection is written. The store's change log (shared by every server process) says
 * which collections were written since the counts were taken, so a cached count is never stale
 * past the next lookup; entries also expire, each after its own time between half of `ttlMs` and
 * `ttlMs`, as a bound: counts computed together (a burst of new queries, a warm-up) then expire
 * apart, not in one second in which every request waits on the recounts. Requests that ask for the same
 * count while it is being computed wait for that computation instead of starting their own (an
 * expired broad count asked by many requests at once would otherwise be computed by each).
 * A count the store can read cheaply off its indexes is asked for with `countIfCheap`, which a
 * planner may do before choosing how to read a page: it shares and caches such counts, and never
 * waits for a full count.
 */
import type { DocumentStore, Filter } from '../src/store/port.ts';

export class CountCache {
  private readonly counts = new Map<string, { n: number; until: number }>();
  /**
   * Counts being computed: concurrent requests for the same count share one computation. A cheap
   * one (`countIfCheap`) may decline and resolve undefined.
   */
  private readonly pending = new Map<string, { cheap: boolean; n: Promise<number | undefined> }>();
  private seenSeq: number | undefined;

  constructor(
    private readonly store: DocumentStore,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 1000,
  ) {}

  /** The count of `filter`, cached or computed by `compute`. */
  async count(collection: string, filter: Filter, compute: () => Promise<number>): Promise<number> {
    const key = await this.keyOf(collection, filter);
    const hit = this.cached(key);
    if (hit !== undefined) return hit;
    const running = this.pending.get(key);
    if (running) {
      const shared = await running.n;
      if (shared !== undefined) return shared;
    }
    return (await this.start(key, false, compute))!;
  }

  /**
   * The count of `filter` when it is cached or `compute` can count it cheaply (it resolves
   * undefined when it cannot); never waits for a full count being computed, which only runs
   * because the cheap way declined.
   */
  async countIfCheap(
    collection: string,
    filter: Filter,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const key = await this.keyOf(collection, filter);
    const hit = this.cached(key);
    if (hit !== undefined) return hit;
    const running = this.pending.get(key);
    if (running) return running.cheap ? running.n : undefined;
    return this.start(key, true, compute);
  }

  private async keyOf(collection: string, filter: Filter): Promise<string> {
    await this.forgetWritten();
    return `${collection}\u0000${JSON.stringify(filter)}`;
  }

  private cached(key: string): number | undefined {
    const hit = this.counts.get(key);
    return hit && Date.now() < hit.until ? hit.n : undefined;
  }

  private start(
    key: string,
    cheap: boolean,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const n = this.computeAndKeep(key, compute).finally(() => {
      if (this.pending.get(key)?.n === n) this.pending.delete(key);
    });
    this.pending.set(key, { cheap, n });
    return n;
  }

  private async computeAndKeep(
    key: string,
    compute: () => Promise<number | undefined>,
  ): Promise<number | undefined> {
    const seqBefore = this.seenSeq;
    const n = await compute();
    if (n === undefined) return n;
    // Only keep the count if nothing was written while it was computed.
    await this.forgetWritten();
    if (this.seenSeq === seqBefore) {
      if (this.counts.size >= this.maxEntries) this.counts.delete(this.counts.keys().next().value!);
      this.counts.set(key, { n, until: Date.now() + this.ttlMs * (0.5 + Math.random() / 2) });
    }
    return n;
  }

  /** Drops the counts of every collection written since the last look at the change log. */
  private async forgetWritten(): Promise<void> {
    if (this.seenSeq === undefined) {
      // First use: start from the newest change; nothing is cached yet.
      this.seenSeq = await this.store.latestSeq();
      return;
    }
    for (;;) {
      const { changes, seq, gap, more } = await this.store.changesSince(this.seenSeq);
      if (gap) {
        // Changes were pruned before this cache saw them: any count may be stale.
        this.counts.clear();
        this.seenSeq = seq;
        return;
      }
      if (changes.length === 0 && seq === this.seenSeq) return;
      const written = new Set(changes.map((c) => c.collection));
      for (const key of [...this.counts.keys()]) {
        if (written.has(key.slice(0, key.indexOf('\u0000')))) this.counts.delete(key);
      }
      this.seenSeq = seq;
      // Read on while the log says more changes follow the page.
      if (!more) return;
    }
  }
}
