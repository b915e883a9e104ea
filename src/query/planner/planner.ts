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
 * (body-prefilter.ts); a narrow one fetches its candidates from the search index
 * (index-candidates.ts), which is asked with the break-even candidate count as its limit, so an
 * estimate that was too low costs at most that much before the next cheapest path runs. Counts
 * use the store's exact index answers where it has them, cached verified counts otherwise. The
 * plan, and how explain and the log show it, is in plan.ts.
 */
import type { Logger } from 'pino';
import type { AccessDirective, Doc, DocumentStore, ExecutionStats, Filter } from '../../store/port.ts';
import { compileFilter } from '../../store/filter.ts';
import type { SearchIndex } from '../../../search/port.ts';
import { assertRegexLengths, conjunctsOf } from '../../../search/filter-predicates.ts';
import { CountCache, type WriteNotes } from '../../../search/count-cache.ts';
import { bodyTestOf, bodyTestSql, describeBodyTest, type BodyTest } from './body-prefilter.ts';
import { SelectivityEstimator } from './estimates.ts';
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
import { IndexCandidates } from './index-candidates.ts';
import { shownPath, summarize, type PlannedFind, type QueryPlan } from './plan.ts';

export type { PlannedFind, QueryPlan } from './plan.ts';

/** Records per read when `executionStats` runs a find in id order to its end. */
const EXPLAIN_CHUNK = 2000;

export interface PlannerOptions {
  logger?: Logger;
  /** Without a sample to estimate from, the index is asked with this share of the collection as limit. Default 0.2. */
  candidateShare?: number;
  /** ... capped at this many. Default 50,000. */
  maxCandidates?: number;
  /** Records sampled per collection for estimates (default 2,000). */
  sampleSize?: number;
}

const SIZE_TTL_MS = 10_000;
const DEFAULT_RECORD_BYTES = 1500;

export class QueryPlanner {
  private readonly sizes = new Map<string, { count: number; at: number }>();
  private readonly counts: CountCache;
  private readonly estimator: SelectivityEstimator;
  private readonly candidateShare: number;
  private readonly maxCandidates: number;
  private readonly logger?: Logger;
  private readonly narrowing: IndexCandidates;

  constructor(
    readonly store: DocumentStore,
    readonly index: SearchIndex,
    options: PlannerOptions = {},
  ) {
    this.candidateShare = options.candidateShare ?? 0.2;
    this.maxCandidates = options.maxCandidates ?? 50_000;
    this.logger = options.logger;
    this.narrowing = new IndexCandidates(store, index, this.maxCandidates);
    this.estimator = new SelectivityEstimator(store, options.sampleSize);
    // Every write to the embedded store enters its change log, so cached counts there are
    // dropped on the next lookup after a write and the time bound is only a backstop; MongoDB
    // may also be written by other programs, past the change log.
    this.counts = new CountCache(store, store.engine === 'sqlite' ? 60_000 : 10_000);
  }

  /** Where a writer notes the records its small writes change, so cached counts follow them (`RecordWriter.observe`). */
  get writeNotes(): WriteNotes {
    return this.counts;
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
    // Counted on the store's own indexes when it can: no candidates to find, no plan to make.
    const indexed = await this.indexedCount(collection, filter);
    if (indexed !== undefined) return indexed;
    return this.counts.count(collection, filter, async () => {
      const plan = await this.planFind(collection, filter, {}, 'count');
      this.logger?.debug({ plan: plan.summary }, 'query plan');
      return this.store.count(collection, filter, plan.candidates ?? undefined, { access: plan.directive });
    });
  }

  /**
   * The exact count the store reads off its own indexes (`DocumentStore.countFromIndex`), cached
   * and shared with the other counts; undefined when the store cannot count the filter that way.
   */
  private async indexedCount(collection: string, filter: Filter): Promise<number | undefined> {
    const store = this.store;
    if (!store.countFromIndex || Object.keys(filter).length === 0) return undefined;
    return this.counts.countIfCheap(collection, filter, () => store.countFromIndex!(collection, filter));
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
    // A page that starts after given sort keys is sought, not skipped to (by the sorted walk).
    const need = purpose === 'count' || limit === undefined ? Infinity : (options.after ? 0 : skip) + limit;

    const sortPath =
      sort && !idOrder && sort.filter(([p]) => p !== 'id').length === 1 ? sort[0]![0] : undefined;
    const attr =
      empty && sortPath === undefined
        ? undefined
        : this.store.conditionEstimates?.(collection, filter, sortPath);
    // The attribute index decides the filter alone: its entry counts bound the matches (below).
    const indexDecides = conjuncts.length === 0 && attr?.exact === true && attr.conditions.length > 0;

    // A count the store reads off its indexes is exact, and costs less than a first sample: a
    // page is estimated from it until the collection's sample is drawn, a count always.
    const counted =
      conjuncts.length > 0 && size > 0 && (purpose === 'count' || !this.estimator.hasSample(collection))
        ? await this.indexedCount(collection, filter)
        : undefined;
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
    } else if (counted !== undefined) {
      // The body test passes at least the matches: their share is its lower bound, and the
      // parsing it saves a page is small beside the rows the walk steps over.
      const selectivity = Math.min(1, counted / size);
      estimate = {
        source: 'attribute index',
        matches: counted,
        selectivity,
        bodyTestPass: hasBodyTest ? selectivity : 1,
        sampled: 0,
        hits: 0,
        exact: true,
      };
    } else if (indexDecides && !this.estimator.hasSample(collection)) {
      // A filter the attribute index decides is planned from its entry counts: a collection's
      // first sample (2,000 records read at random, then parsed: tens of ms, more from a cold
      // file) is drawn for a filter that needs it, not on the way of this one.
      estimate = { source: 'none' };
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
      page: limit ?? need,
      idOrder,
    };

    /** Whether the matches are known only to be at least the index's count cap. */
    let fewestUnknown = false;
    if (attr?.exact && attr.conditions.length > 0) {
      // The index decides the filter: its entry counts bound the matches, exactly for one
      // condition below the cap, and are read now (a sample may predate the records).
      // Counts that reached the cap bound nothing; the ids an `id` condition names always do.
      const bounds = attr.conditions
        .filter((c) => c.counted || c.entries < attr.cap)
        .map((c) => Math.floor(c.entries));
      if (bounds.length === 0) {
        inputs.matches = Math.max(inputs.matches, attr.cap);
        // Without a sample, all that is known is that at least `cap` records match. A walk in id
        // order steps over more records the fewer match (a study's 10% of 10^5 biosamples: 110
        // parsed for a page of 11, 2-4 ms), where the index's own paths read a page's entries
        // whatever their share: the walk is costed as if the fewest matched.
        fewestUnknown = !known;
      } else {
        const fewest = Math.min(...bounds);
        inputs.matches = attr.conditions.length === 1 ? fewest : Math.min(inputs.matches, fewest);
      }
      inputs.size = Math.max(inputs.size, inputs.matches);
    }
    const walkInputs =
      fewestUnknown && attr ? { ...inputs, matches: Math.min(attr.cap, inputs.size) } : inputs;
    const paths: PathEstimate[] = [idWalkCost(walkInputs)];
    if (conjuncts.length === 0) paths.push(notApplicable('candidate-ids', 'no $regex or text predicate'));
    else paths.push(candidateCost(inputs, Math.max(1, Math.ceil((known?.matches ?? size) * 1.1))));
    if (attr && attr.conditions.length > 0) {
      const best = attr.conditions.reduce((a, b) => (b.entries < a.entries ? b : a));
      const entries =
        !best.counted && best.entries >= attr.cap ? Math.max(attr.cap, inputs.matches) : best.entries;
      paths.push(attributeIndexCost(inputs, entries, attr.exact, best.ordered));
    } else if (this.store.conditionEstimates) {
      paths.push(notApplicable('attribute-index', 'no equality or range condition on an indexed path'));
    }
    if (!idOrder && this.store.engine === 'sqlite') {
      const decided = empty || attr?.exact === true;
      // Without candidates from the search index: the walk checks the filter on the records it meets.
      if (attr?.sortIndexed && Number.isFinite(need)) paths.push(sortedIndexWalkCost(inputs, !decided));
      else paths.push(notApplicable('sorted-index-walk', 'needs a limit and one indexed sort key'));
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
    } else if (purpose === 'count' && counted !== undefined) {
      const others = paths.filter((p) => p.path !== 'attribute-index');
      paths.length = 0;
      paths.push(...others, {
        path: 'attribute-index',
        docsExamined: 0,
        keysExamined: counted,
        cost: 1,
        note: "counted on the attribute index's distinct values at the path",
        applicable: true,
      });
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
      const found = await this.narrowing.candidatesFor(collection, conjuncts, cap);
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
    if ((chosen.path === 'id-walk' || chosen.path === 'sorted-index-walk') && hasBodyTest)
      directive.bodyTest = {
        ...bodyTestSql(bodyTest, 'x.body'),
        ...(known ? { pass: inputs.bodyTestPass } : {}),
      };
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
