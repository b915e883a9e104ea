/**
 * Candidate ids from the search index for the planner (planner.ts): the indexable conjuncts of a
 * filter asked of the index and intersected (their alternatives united), with the writes the
 * index may not hold yet added from the change log.
 */
import type { DocumentStore } from '../../store/port.ts';
import type { Candidates, Freshness, IndexablePredicate, SearchIndex } from '../../../search/port.ts';
import type { Conjunct } from '../../../search/filter-predicates.ts';

const ALL: Candidates = { all: true };
const UNNARROWABLE_TTL_MS = 10_000;
const UNNARROWABLE_CACHE_SIZE = 1000;

/** Narrows a collection with the search index; remembers for a while what it could not narrow. */
export class IndexCandidates {
  private readonly unnarrowable = new Map<string, number>();
  /** The change log read past the watermark last asked about (see `writtenSince`). */
  private logRead: { since: number; read: Promise<LogRead | null> } | null = null;

  /** `maxCandidates`: more ids than this written since the index caught up, and it cannot narrow. */
  constructor(
    private readonly store: DocumentStore,
    private readonly index: SearchIndex,
    private readonly maxCandidates: number,
  ) {}

  /** Candidate ids of the indexable conjuncts, or null when the index has more than `limit`. */
  async candidatesFor(collection: string, conjuncts: Conjunct[], limit: number): Promise<Set<string> | null> {
    // The index's freshness is read before the index is asked: whatever its watermark then
    // covers is in the index's answer, and the writes after it are added from the change log.
    const freshness = await this.freshness(collection);
    const narrowed = await this.intersect(collection, conjuncts, limit);
    if (narrowed.all) return null;
    const fresh = await this.freshIds(collection, freshness);
    if (fresh === null) return null;
    for (const id of fresh) narrowed.ids.add(id);
    return narrowed.ids;
  }

  private async intersect(collection: string, conjuncts: Conjunct[], limit: number): Promise<Candidates> {
    let result: Set<string> | null = null;
    for (const c of conjuncts) {
      const found =
        c.kind === 'predicate'
          ? await this.predicateCandidates(collection, c.predicate, limit)
          : await this.union(collection, c.branches, limit);
      if (found.all) continue;
      result = result === null ? found.ids : new Set([...found.ids].filter((id) => result!.has(id)));
      if (result.size === 0) break;
    }
    return result === null ? ALL : { all: false, ids: result };
  }

  /**
   * Asks the index, remembering for a few seconds which predicates had more candidates than a
   * limit at least as large: a repeat (the next page, the count) goes straight to another path.
   */
  private async predicateCandidates(
    collection: string,
    predicate: IndexablePredicate,
    limit: number,
  ): Promise<Candidates> {
    // A collection the index keeps nothing of (the service's own records) has no candidates.
    if (this.index.covers && !this.index.covers(collection)) return ALL;
    const key = `${collection}\u0000${JSON.stringify(predicate)}`;
    const known = this.unnarrowable.get(key);
    if (known !== undefined && known >= limit) return ALL;
    const found = await this.index.candidates(collection, predicate, limit);
    if (found.all) {
      if (this.unnarrowable.size >= UNNARROWABLE_CACHE_SIZE) this.unnarrowable.clear();
      this.unnarrowable.set(key, limit);
      setTimeout(() => {
        if (this.unnarrowable.get(key) === limit) this.unnarrowable.delete(key);
      }, UNNARROWABLE_TTL_MS).unref();
    }
    return found;
  }

  private async union(collection: string, branches: Conjunct[][], limit: number): Promise<Candidates> {
    const ids = new Set<string>();
    for (const branch of branches) {
      const found = await this.intersect(collection, branch, limit);
      if (found.all) return ALL;
      for (const id of found.ids) ids.add(id);
      if (ids.size > limit) return ALL;
    }
    return { all: false, ids };
  }

  /** Where the index's knowledge of a collection ends (null: it is written with the records). */
  private async freshness(collection: string): Promise<Freshness | null> {
    if (this.index.synchronous) return null;
    if (this.index.freshness) return this.index.freshness(collection);
    return { since: await this.index.watermark(), missing: [] };
  }

  /**
   * Ids written since the index last caught up, and ids it could not take: always candidates, so
   * a search never misses a fresh write. Null when there are too many to help, or when the change
   * log holds more than one page past the watermark (the index is too far behind to narrow).
   */
  private async freshIds(collection: string, freshness: Freshness | null): Promise<string[] | null> {
    if (freshness === null) return [];
    const written = await this.writtenSince(freshness.since);
    if (written === null) return null;
    const ids = [...(written.get(collection) ?? [])];
    ids.push(...freshness.missing);
    return ids.length > this.maxCandidates ? null : ids;
  }

  /**
   * The records written (and not deleted since) after the watermark `since`, by collection; null
   * when the log holds more than a page past it, or no longer reaches back to it. Every search
   * while the index catches up asks from the same watermark: the log read so far is kept and read
   * on from where it stopped, one read at a time, and a watermark found too far behind stays so
   * until it moves. (Each search read every change past it before: up to a page of 100,000 from
   * MongoDB, for every request, while a large write was being indexed.)
   */
  private writtenSince(since: number): Promise<Map<string, Set<string>> | null> {
    const before = this.logRead?.since === since ? this.logRead.read : undefined;
    const read = (async (): Promise<LogRead | null> => {
      const kept = before ? await before.catch(() => undefined) : undefined;
      if (kept === null) return null;
      const state: LogRead = kept ?? { seq: since, written: new Map() };
      const { changes, seq, gap, more } = await this.store.changesSince(state.seq);
      if (gap || (more && kept === undefined)) return null;
      for (const c of changes) {
        let ids = state.written.get(c.collection);
        if (!ids) state.written.set(c.collection, (ids = new Set()));
        if (c.deleted) ids.delete(c.id);
        else ids.add(c.id);
      }
      // A page read on from a kept state that still leaves more: the watermark fell a page behind.
      if (more) return null;
      state.seq = seq;
      return state;
    })();
    this.logRead = { since, read };
    return read.then((state) => state?.written ?? null);
  }
}

/** The change log read past one watermark (`IndexCandidates.writtenSince`). */
interface LogRead {
  /** Read up to this sequence number. */
  seq: number;
  written: Map<string, Set<string>>;
}
