/**
 * The query planner: every read of metadata records goes through here. For a filter and the
 * page asked for, it lists the ways the store can read the records (access paths), estimates
 * for each the records and index entries it would read and what that costs (cost-model.ts, with
 * cardinalities from a sample of the collection, estimates.ts, and from the attribute index), and
 * picks the cheapest. The store executes the chosen path; the whole original filter is still
 * evaluated on every record read (unless the attribute index decides it exactly), so the
 * answer never depends on the plan, only its cost does.
 *
 * A page asks for a page: a broad predicate walks records in the requested order and stops when
 * the page is full, skipping unparsed the records whose text lacks the predicate's substrings
 * (body-prefilter.ts); a narrow one fetches its candidates from the search index, which is asked
 * with the break-even candidate count as its limit, so an estimate that was too low costs at most
 * that much before the next cheapest path runs. Counts use the store's exact index answers where
 * it has them, cached verified counts otherwise.
 */
import type { Logger } from 'pino';
import type {
  AccessDirective,
  AccessPathKind,
  Doc,
  DocumentStore,
  ExecutionStats,
  Filter,
  FindOptions,
} from '../../store/port.ts';
import { compileFilter } from '../../store/filter.ts';
import type { Candidates, Freshness, IndexablePredicate, SearchIndex } from '../../../search/port.ts';
import { assertRegexLengths, conjunctsOf, type Conjunct } from '../../../search/filter-predicates.ts';
import { CountCache } from '../../../search/count-cache.ts';
import { bodyTestOf, bodyTestSql, describeBodyTest, type BodyTest } from './body-prefilter.ts';
import { SelectivityEstimator, type SelectivityEstimate } from './estimates.ts';
import {
  attributeIndexCost,
  candidateBreakEven,
  candidateCost,
  idWalkCost,
  notApplicable,
  sortedIndexWalkCost,
  sortKeysCost,
  type CostInputs,
  type PathEstimate,
} from './cost-model.ts';

/** Records per read when `executionStats` runs a find in id order to its end. */
const EXPLAIN_CHUNK = 2000;

export type PlannedFind = Omit<FindOptions, 'candidateIds' | 'access' | 'stats'>;

export interface PlannerOptions {
  logger?: Logger;
  /** Without a sample to estimate from, the index is asked with this share of the collection as limit. Default 0.2. */
  candidateShare?: number;
  /** ... capped at this many. Default 50,000. */
  maxCandidates?: number;
  /** Records sampled per collection for estimates (default 2,000). */
  sampleSize?: number;
}

/** A chosen plan: what explain shows and what the store is told. */
export interface QueryPlan {
  collection: string;
  filter: Filter;
  sort?: Array<[string, 1 | -1]>;
  skip: number;
  limit?: number;
  purpose: 'page' | 'count';
  collectionSize: number;
  estimate: (SelectivityEstimate & { source: 'sample' | 'collection size' }) | { source: 'none' };
  bodyTest?: string;
  chosen: PathEstimate;
  rejected: PathEstimate[];
  /** Candidate ids from the search index when the chosen path reads them. */
  candidates: Set<string> | null;
  /** Whether the index was asked and gave up (its limit, the break-even count). */
  indexGaveUpAbove?: number;
  directive: AccessDirective;
  summary: string;
}

const ALL: Candidates = { all: true };
const SIZE_TTL_MS = 10_000;
const UNNARROWABLE_TTL_MS = 10_000;
const UNNARROWABLE_CACHE_SIZE = 1000;
const DEFAULT_RECORD_BYTES = 1500;

const ms = (us: number) => (Number.isFinite(us) ? Math.round(us) / 1000 : null);

export class QueryPlanner {
  private readonly sizes = new Map<string, { count: number; at: number }>();
  private readonly unnarrowable = new Map<string, number>();
  private readonly counts: CountCache;
  private readonly estimator: SelectivityEstimator;
  private readonly candidateShare: number;
  private readonly maxCandidates: number;
  private readonly logger?: Logger;

  constructor(
    readonly store: DocumentStore,
    readonly index: SearchIndex,
    options: PlannerOptions = {},
  ) {
    this.candidateShare = options.candidateShare ?? 0.2;
    this.maxCandidates = options.maxCandidates ?? 50_000;
    this.logger = options.logger;
    this.estimator = new SelectivityEstimator(store, options.sampleSize);
    // Every write to the embedded store enters its change log, so cached counts there are
    // dropped on the next lookup after a write and the time bound is only a backstop; MongoDB
    // may also be written by other programs, past the change log.
    this.counts = new CountCache(store, store.engine === 'sqlite' ? 60_000 : 10_000);
  }

  async find(collection: string, filter: Filter, options: PlannedFind = {}): Promise<Doc[]> {
    const plan = await this.planFind(collection, filter, options, 'page');
    return this.execute(plan, options);
  }

  /** Runs a plan; `stats` collects what the store read. */
  async execute(plan: QueryPlan, options: PlannedFind, stats?: ExecutionStats): Promise<Doc[]> {
    const started = performance.now();
    const docs = await this.store.find(plan.collection, plan.filter, {
      ...options,
      ...(plan.candidates ? { candidateIds: plan.candidates } : {}),
      access: plan.directive,
      ...(stats ? { stats } : {}),
    });
    this.logger?.debug(
      { plan: plan.summary, returned: docs.length, ms: Math.round((performance.now() - started) * 10) / 10 },
      'query plan',
    );
    return docs;
  }

  async count(collection: string, filter: Filter): Promise<number> {
    assertRegexLengths(filter);
    compileFilter(filter);
    return this.counts.count(collection, filter, async () => {
      const plan = await this.planFind(collection, filter, {}, 'count');
      this.logger?.debug({ plan: plan.summary }, 'query plan');
      return this.store.count(collection, filter, plan.candidates ?? undefined, { access: plan.directive });
    });
  }

  /** Candidate ids for a filter as a count would read them (null: no narrowing). */
  async plan(
    collection: string,
    filter: Filter,
  ): Promise<{ candidates: Set<string> | null; predicates: number }> {
    const plan = await this.planFind(collection, filter, {}, 'count');
    return { candidates: plan.candidates, predicates: conjunctsOf(filter).length };
  }

  async planFind(
    collection: string,
    filter: Filter,
    options: PlannedFind,
    purpose: 'page' | 'count',
  ): Promise<QueryPlan> {
    assertRegexLengths(filter);
    compileFilter(filter); // refuses a bad filter before any work
    const size = await this.sizeOf(collection);
    const conjuncts = conjunctsOf(filter);
    const bodyTest: BodyTest = conjuncts.length > 0 ? bodyTestOf(conjuncts) : true;
    const hasBodyTest = bodyTest !== true && this.store.engine === 'sqlite';
    const empty = Object.keys(filter).length === 0;
    const sort = options.sort && options.sort.length > 0 ? options.sort : undefined;
    const idOrder = !sort || (sort.length === 1 && sort[0]![0] === 'id' && sort[0]![1] === 1);
    const skip = options.skip ?? 0;
    const limit = options.limit && options.limit > 0 ? options.limit : undefined;
    const need = purpose === 'count' || limit === undefined ? Infinity : skip + limit;

    let estimate: QueryPlan['estimate'];
    if (empty) {
      estimate = {
        source: 'collection size',
        matches: size,
        selectivity: 1,
        bodyTestPass: 1,
        sampled: 0,
        hits: 0,
        exact: true,
      };
    } else if (this.estimator.available && size > 0) {
      estimate = {
        source: 'sample',
        ...(await this.estimator.estimate(collection, filter, hasBodyTest ? bodyTest : true, size)),
      };
    } else estimate = { source: 'none' };
    const known = estimate.source !== 'none' ? estimate : undefined;
    const inputs: CostInputs = {
      size,
      averageBytes: this.estimator.averageBytes(collection) ?? DEFAULT_RECORD_BYTES,
      matches: known?.matches ?? size,
      bodyTestPass: hasBodyTest ? (known?.bodyTestPass ?? 1) : 1,
      hasBodyTest,
      need,
      idOrder,
    };

    const sortPath =
      sort && !idOrder && sort.filter(([p]) => p !== 'id').length === 1 ? sort[0]![0] : undefined;
    const attr = empty ? undefined : this.store.conditionEstimates?.(collection, filter, sortPath);
    const paths: PathEstimate[] = [idWalkCost(inputs)];
    if (conjuncts.length === 0) paths.push(notApplicable('candidate-ids', 'no $regex or text predicate'));
    else paths.push(candidateCost(inputs, Math.max(1, Math.ceil((known?.matches ?? size) * 1.1))));
    if (attr && attr.conditions.length > 0) {
      const best = attr.conditions.reduce((a, b) => (b.entries < a.entries ? b : a));
      const entries = best.entries >= attr.cap ? Math.max(attr.cap, inputs.matches) : best.entries;
      paths.push(attributeIndexCost(inputs, entries, attr.exact, best.ordered));
    } else if (this.store.conditionEstimates) {
      paths.push(notApplicable('attribute-index', 'no equality or range condition on an indexed path'));
    }
    if (!idOrder && this.store.engine === 'sqlite') {
      const decided = empty || attr?.exact === true;
      if (decided && attr?.sortIndexed && Number.isFinite(need)) paths.push(sortedIndexWalkCost(inputs));
      else
        paths.push(
          notApplicable(
            'sorted-index-walk',
            'needs a limit, one indexed sort key and a filter the index decides',
          ),
        );
      paths.push(
        decided ? sortKeysCost(inputs) : notApplicable('sort-keys', 'the filter needs every record checked'),
      );
    }
    // An exact count the store reads off its indexes (collection statistics, attribute index).
    if (purpose === 'count' && (empty || attr?.exact)) {
      const exact = paths.find((p) => p.path === (empty ? 'id-walk' : 'attribute-index'))!;
      exact.cost = 1;
      exact.docsExamined = 0;
      exact.note = empty ? 'collection statistics' : 'counted on the attribute index';
    }

    let ranked = [...paths].filter((p) => p.applicable).sort((a, b) => a.cost - b.cost);
    if (!known && conjuncts.length > 0) {
      // Nothing to estimate from: the index's answer (or its giving up) bounds the cost, so ask it first.
      const cand = ranked.find((p) => p.path === 'candidate-ids')!;
      cand.note = 'no sample to estimate from: the search index is asked first';
      ranked = [cand, ...ranked.filter((p) => p !== cand)];
    }
    let candidates: Set<string> | null = null;
    let gaveUpAbove: number | undefined;
    if (ranked[0]!.path === 'candidate-ids') {
      const next = ranked[1]!;
      const cap = known
        ? Math.max(100, candidateBreakEven(inputs, next.cost))
        : Math.max(100, Math.min(this.maxCandidates, Math.floor(size * this.candidateShare)));
      const found = await this.candidatesFor(collection, conjuncts, cap);
      if (found === null) {
        gaveUpAbove = cap;
        const cand = ranked[0]!;
        cand.applicable = false;
        cand.note = `the search index has more than ${cap} candidates, past the break-even count`;
        ranked = ranked.slice(1);
      } else {
        candidates = found;
        const actual = candidateCost(inputs, found.size);
        Object.assign(ranked[0]!, actual, { note: `${found.size} candidate ids from the search index` });
      }
    }
    const chosen = ranked[0]!;
    const directive: AccessDirective = { path: chosen.path };
    if (chosen.path === 'id-walk' && hasBodyTest) directive.bodyTest = bodyTestSql(bodyTest, 'x.body');
    const plan: QueryPlan = {
      collection,
      filter,
      sort,
      skip,
      limit,
      purpose,
      collectionSize: size,
      estimate,
      bodyTest: hasBodyTest ? describeBodyTest(bodyTest) : undefined,
      chosen,
      rejected: paths.filter((p) => p !== chosen),
      candidates,
      indexGaveUpAbove: gaveUpAbove,
      directive,
      summary: '',
    };
    plan.summary = summarize(plan);
    return plan;
  }

  /** The explain document of a find or count, in MongoDB's shape with this planner's paths. */
  async explain(
    collection: string,
    filter: Filter,
    options: PlannedFind,
    purpose: 'page' | 'count',
    verbosity: 'queryPlanner' | 'executionStats',
    databaseName: string,
  ): Promise<Record<string, unknown>> {
    const started = performance.now();
    const plan = await this.planFind(collection, filter, options, purpose);
    const planningMillis = performance.now() - started;
    const out: Record<string, unknown> = {
      queryPlanner: {
        namespace: `${databaseName}.${collection}`,
        parsedQuery: filter,
        ...(plan.sort ? { sort: Object.fromEntries(plan.sort) } : {}),
        ...(plan.skip ? { skip: plan.skip } : {}),
        ...(plan.limit !== undefined ? { limit: plan.limit } : {}),
        collectionSize: plan.collectionSize,
        estimate: plan.estimate,
        ...(plan.bodyTest ? { bodyTest: plan.bodyTest } : {}),
        ...(plan.indexGaveUpAbove !== undefined ? { searchIndexGaveUpAbove: plan.indexGaveUpAbove } : {}),
        winningPlan: shownPath(plan.chosen, plan),
        rejectedPlans: plan.rejected.map((p) => shownPath(p, plan)),
        planningTimeMillis: Math.round(planningMillis * 100) / 100,
        summary: plan.summary,
      },
    };
    if (verbosity === 'executionStats') {
      const stats: ExecutionStats = { docsExamined: 0, keysExamined: 0, docsParsed: 0 };
      const t0 = performance.now();
      let returned: number;
      if (purpose === 'count') {
        returned = await this.store.count(collection, filter, plan.candidates ?? undefined, {
          access: plan.directive,
          stats,
        });
      } else returned = await this.runToEnd(plan, options, stats);
      out.executionStats = {
        ...(purpose === 'count' ? { count: returned } : { nReturned: returned }),
        executionTimeMillis: Math.round((performance.now() - t0 + planningMillis) * 100) / 100,
        totalKeysExamined: stats.keysExamined,
        totalDocsExamined: stats.docsExamined,
        totalDocsParsed: stats.docsParsed,
        accessPath: stats.path ?? plan.chosen.path,
      };
    }
    return out;
  }

  /**
   * Runs a find's plan to its end for `executionStats`, as MongoDB does: every match (up to the
   * find's limit), its work counted in `stats`. Only ids are kept, and a read in id order goes in
   * chunks, so explaining a query of a million matches counts them without holding them.
   */
  private async runToEnd(plan: QueryPlan, options: PlannedFind, stats: ExecutionStats): Promise<number> {
    const idsOnly = { ...options, projection: ['id'] };
    const idOrder =
      !plan.sort || (plan.sort.length === 1 && plan.sort[0]![0] === 'id' && plan.sort[0]![1] === 1);
    if (!idOrder || plan.limit !== undefined || plan.skip)
      return (await this.execute(plan, idsOnly, stats)).length;
    let returned = 0;
    let afterId: string | undefined;
    for (;;) {
      const chunk = await this.execute(
        plan,
        { ...idsOnly, sort: undefined, afterId, limit: EXPLAIN_CHUNK },
        stats,
      );
      returned += chunk.length;
      if (chunk.length < EXPLAIN_CHUNK) return returned;
      afterId = chunk[chunk.length - 1]!.id;
    }
  }

  /** Candidate ids of the indexable conjuncts, or null when the index has more than `limit`. */
  private async candidatesFor(
    collection: string,
    conjuncts: Conjunct[],
    limit: number,
  ): Promise<Set<string> | null> {
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
    const { changes, gap, more } = await this.store.changesSince(freshness.since);
    if (gap || more) return null;
    const ids = changes.filter((c) => c.collection === collection && !c.deleted).map((c) => c.id);
    ids.push(...freshness.missing);
    return ids.length > this.maxCandidates ? null : ids;
  }

  private async sizeOf(collection: string): Promise<number> {
    const now = Date.now();
    let size = this.sizes.get(collection);
    if (!size || now - size.at > SIZE_TTL_MS) {
      size = { count: await this.store.count(collection, {}), at: now };
      this.sizes.set(collection, size);
    }
    return size.count;
  }
}

const STAGES: Record<AccessPathKind, string> = {
  'id-walk': 'COLLSCAN',
  'candidate-ids': 'SEARCH_INDEX',
  'attribute-index': 'IXSCAN',
  'sorted-index-walk': 'IXSCAN',
  'sort-keys': 'SORT_KEY_GENERATOR',
  'sort-in-memory': 'SORT',
};

function shownPath(p: PathEstimate, plan: QueryPlan): Record<string, unknown> {
  return {
    stage: STAGES[p.path],
    accessPath: p.path,
    ...(p.applicable
      ? {
          estimatedDocsExamined: p.docsExamined,
          estimatedKeysExamined: p.keysExamined,
          estimatedCostMillis: ms(p.cost),
        }
      : { applicable: false }),
    note: p.note,
    ...(p === plan.chosen && plan.directive.bodyTest && plan.bodyTest ? { bodyTest: plan.bodyTest } : {}),
  };
}

/** One line: collection, chosen path with its estimate, the runner-up. */
function summarize(plan: QueryPlan): string {
  const est =
    plan.estimate.source === 'sample'
      ? `~${plan.estimate.matches} matches (sample ${plan.estimate.hits}/${plan.estimate.sampled})`
      : plan.estimate.source === 'collection size'
        ? `${plan.collectionSize} records`
        : 'no estimate';
  const page = plan.purpose === 'count' ? 'count' : `page ${plan.skip}+${plan.limit ?? 'all'}`;
  const runnerUp = plan.rejected.filter((p) => p.applicable).sort((a, b) => a.cost - b.cost)[0];
  return (
    `${plan.collection} ${page}: ${plan.chosen.path} (~${plan.chosen.docsExamined} docs, ${ms(plan.chosen.cost)} ms est)` +
    (plan.directive.bodyTest ? ` body test ${plan.bodyTest}` : '') +
    `; ${est} of ${plan.collectionSize}` +
    (runnerUp ? `; next ${runnerUp.path} ${ms(runnerUp.cost)} ms` : '') +
    (plan.indexGaveUpAbove !== undefined ? `; search index gave up above ${plan.indexGaveUpAbove}` : '')
  );
}
