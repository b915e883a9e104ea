/**
 * Remembers exact match counts of recent filters. Counting a broad text search means verifying
 * every match, and every page of the same query asks again; the count only changes when a record
 * of that collection is written. The store's change log (shared by every server process) says
 * which collections were written since the counts were taken, so a cached count is never stale
 * past the next lookup; entries also expire after `ttlMs` as a bound. Requests that ask for the same
 * count while it is being computed wait for that computation instead of starting their own (an
 * expired broad count asked by many requests at once would otherwise be computed by each).
 */
import type { DocumentStore, Filter } from '../src/store/port.ts';

export class CountCache {
  private readonly counts = new Map<string, { n: number; at: number }>();
  /** Counts being computed: concurrent requests for the same count share one computation. */
  private readonly pending = new Map<string, Promise<number>>();
  private seenSeq: number | undefined;

  constructor(
    private readonly store: DocumentStore,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 1000,
  ) {}

  async count(collection: string, filter: Filter, compute: () => Promise<number>): Promise<number> {
    await this.forgetWritten();
    const key = `${collection}\u0000${JSON.stringify(filter)}`;
    const hit = this.counts.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.n;
    const running = this.pending.get(key);
    if (running) return running;
    const computing = this.computeAndKeep(key, compute).finally(() => this.pending.delete(key));
    this.pending.set(key, computing);
    return computing;
  }

  private async computeAndKeep(key: string, compute: () => Promise<number>): Promise<number> {
    const seqBefore = this.seenSeq;
    const n = await compute();
    // Only keep the count if nothing was written while it was computed.
    await this.forgetWritten();
    if (this.seenSeq === seqBefore) {
      if (this.counts.size >= this.maxEntries) this.counts.delete(this.counts.keys().next().value!);
      this.counts.set(key, { n, at: Date.now() });
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
