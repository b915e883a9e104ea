/**
 * The query planner: splits a filter into indexable predicates (`$regex`, text search) and the
 * rest, asks the search index for candidate ids, and lets the source of truth evaluate the
 * whole original filter on those candidates (sort and paging after verification, so counts
 * stay exact). Every read of metadata records goes through here.
 */
import type { DocumentStore, Doc, Filter, FindOptions } from '../src/store/port.ts';
import type { Candidates, IndexablePredicate, SearchIndex } from './port.ts';
import { assertRegexLengths, conjunctsOf, type Conjunct } from './filter-predicates.ts';
import { CountCache } from './count-cache.ts';

export type PlannedFind = Omit<FindOptions, 'candidateIds'>;

export interface PlannerOptions {
  /** Give up narrowing when a predicate has more candidates than this share of the collection. Default 0.2. */
  candidateShare?: number;
  /** ... or more than this many. Default 50,000. */
  maxCandidates?: number;
}

/** How a filter was answered: for logs, tests and the benchmark. */
export interface QueryPlan {
  /** Candidate ids from the index (fresh writes included), or null for a scan. */
  candidates: Set<string> | null;
  predicates: number;
}

const ALL: Candidates = { all: true };
const SIZE_TTL_MS = 10_000;
const UNNARROWABLE_TTL_MS = 10_000;
const UNNARROWABLE_CACHE_SIZE = 1000;

export class QueryPlanner {
  private readonly sizes = new Map<string, { count: number; at: number }>();
  private readonly unnarrowable = new Map<string, number>();
  private readonly candidateShare: number;
  private readonly maxCandidates: number;
  private readonly counts: CountCache;

  constructor(
    readonly store: DocumentStore,
    readonly index: SearchIndex,
    options: PlannerOptions = {},
  ) {
    this.candidateShare = options.candidateShare ?? 0.2;
    this.maxCandidates = options.maxCandidates ?? 50_000;
    // Every write to the embedded store enters its change log, so cached counts there are
    // dropped on the next lookup after a write and the time bound is only a backstop; MongoDB
    // may also be written by other programs, past the change log.
    this.counts = new CountCache(store, store.engine === 'sqlite' ? 60_000 : 10_000);
  }

  async find(collection: string, filter: Filter, options: PlannedFind = {}): Promise<Doc[]> {
    const plan = await this.plan(collection, filter);
    if (plan.candidates === null) return this.store.find(collection, filter, options);
    return this.store.find(collection, filter, { ...options, candidateIds: plan.candidates });
  }

  async count(collection: string, filter: Filter): Promise<number> {
    return this.counts.count(collection, filter, async () => {
      const plan = await this.plan(collection, filter);
      return this.store.count(collection, filter, plan.candidates ?? undefined);
    });
  }

  /** Candidate ids for a filter, or null when the index cannot narrow it. */
  async plan(collection: string, filter: Filter): Promise<QueryPlan> {
    assertRegexLengths(filter);
    const conjuncts = conjunctsOf(filter);
    if (conjuncts.length === 0) return { candidates: null, predicates: 0 };
    const limit = await this.limitFor(collection);
    const narrowed = await this.intersect(collection, conjuncts, limit);
    if (narrowed.all) return { candidates: null, predicates: conjuncts.length };
    const fresh = await this.freshIds(collection);
    if (fresh === null) return { candidates: null, predicates: conjuncts.length };
    for (const id of fresh) narrowed.ids.add(id);
    return { candidates: narrowed.ids, predicates: conjuncts.length };
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
   * Asks the index, remembering for a few seconds which predicates it could not narrow: giving up
   * costs a bounded walk of the index, and a scan is always a correct answer, so repeats (a find
   * and its count, the next page) skip straight to it.
   */
  private async predicateCandidates(
    collection: string,
    predicate: IndexablePredicate,
    limit: number,
  ): Promise<Candidates> {
    const key = `${collection}\u0000${JSON.stringify(predicate)}`;
    const until = this.unnarrowable.get(key);
    if (until !== undefined && until > Date.now()) return ALL;
    const found = await this.index.candidates(collection, predicate, limit);
    if (found.all) {
      if (this.unnarrowable.size >= UNNARROWABLE_CACHE_SIZE) this.unnarrowable.clear();
      this.unnarrowable.set(key, Date.now() + UNNARROWABLE_TTL_MS);
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

  /**
   * Ids written since the index last caught up: always candidates, so a search never misses a
   * fresh write. Null when there are too many to help.
   */
  private async freshIds(collection: string): Promise<string[] | null> {
    if (this.index.synchronous) return [];
    const { changes, gap } = await this.store.changesSince(await this.index.watermark());
    if (gap) return null;
    const ids = changes.filter((c) => c.collection === collection && !c.deleted).map((c) => c.id);
    return ids.length > this.maxCandidates ? null : ids;
  }

  private async limitFor(collection: string): Promise<number> {
    const now = Date.now();
    let size = this.sizes.get(collection);
    if (!size || now - size.at > SIZE_TTL_MS) {
      size = { count: await this.store.count(collection, {}), at: now };
      this.sizes.set(collection, size);
    }
    return Math.max(100, Math.min(this.maxCandidates, Math.floor(size.count * this.candidateShare)));
  }
}
