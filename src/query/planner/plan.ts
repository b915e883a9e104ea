/**
 * A query plan as the planner (planner.ts) chooses it, and how it is shown: the paths of an
 * explain document, in MongoDB's stage names, and the one-line summary the planner logs.
 */
import type { AccessDirective, AccessPathKind, Filter, FindOptions } from '../../store/port.ts';
import type { SelectivityEstimate } from './estimates.ts';
import type { PathEstimate } from './cost-model.ts';

export type PlannedFind = Omit<FindOptions, 'candidateIds' | 'access' | 'stats'>;

/** A chosen plan: what explain shows and what the store is told. */
export interface QueryPlan {
  collection: string;
  filter: Filter;
  sort?: Array<[string, 1 | -1]>;
  skip: number;
  limit?: number;
  purpose: 'page' | 'count';
  collectionSize: number;
  estimate:
    (SelectivityEstimate & { source: 'sample' | 'collection size' | 'attribute index' }) | { source: 'none' };
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

const ms = (us: number) => (Number.isFinite(us) ? Math.round(us) / 1000 : null);

const STAGES: Record<AccessPathKind, string> = {
  'id-walk': 'COLLSCAN',
  'candidate-ids': 'SEARCH_INDEX',
  'attribute-index': 'IXSCAN',
  'sorted-index-walk': 'IXSCAN',
  'sort-keys': 'SORT_KEY_GENERATOR',
  'sort-in-memory': 'SORT',
};

/** A path as the explain document shows it (`winningPlan`, `rejectedPlans`). */
export function shownPath(p: PathEstimate, plan: QueryPlan): Record<string, unknown> {
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
export function summarize(plan: QueryPlan): string {
  const est =
    plan.estimate.source === 'sample'
      ? `~${plan.estimate.matches} matches (sample ${plan.estimate.hits}/${plan.estimate.sampled})`
      : plan.estimate.source === 'collection size'
        ? `${plan.collectionSize} records`
        : plan.estimate.source === 'attribute index'
          ? `${plan.estimate.matches} matches (counted on the attribute index)`
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
