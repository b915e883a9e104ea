/**
 * Index conditions turned into SQL: checks of one more condition on a candidate record, the
 * candidate ids a filter's conditions select, and kept estimates of how many entries a condition
 * matches, which choose the driving condition and tell broad conditions from narrow ones.
 */
import { valueSql, type AttributeKeys, type Condition, type IndexPlan } from './attribute-index.ts';
import type { SqlParam, StatementCache } from './statement-cache.ts';
import { recordCount } from './statistics.ts';

/** Index rows an estimate counts at most. */
export const ESTIMATE_CAP = 5000;
const ESTIMATE_TTL_MS = 60_000;
const ESTIMATES_KEPT = 10_000;

/** The plan of a filter without index conditions: every record of the collection. */
export const NO_CONDITIONS: IndexPlan = { conditions: [], exact: false };

/** The key of a path in the collection at hand (`AttributeKeys.of`). */
export type KeyOf = (path: string) => number;

/**
 * SQL checking one more condition for the record `alias`, or undefined when it is cheaper to
 * leave it to the filter: equality is a primary-key probe, a range would scan per record.
 */
export function conditionSql(
  alias: string,
  c: Condition,
  params: SqlParam[],
  keyOf: KeyOf,
): string | undefined {
  if (c.path === 'id') {
    const v = valueSql(`${alias}.id`, c);
    params.push(...v.params);
    return v.sql;
  }
  if (c.op !== 'eq' && c.op !== 'in') return undefined;
  const v = valueSql('y.value', c);
  params.push(keyOf(c.path), ...v.params);
  return `EXISTS (SELECT 1 FROM attr_index y WHERE y.key = ? AND ${v.sql} AND y.id = ${alias}.id)`;
}

/** Every condition SQL can check; `complete` says whether all of them made it. */
export function conditionsSql(
  alias: string,
  conditions: Condition[],
  params: SqlParam[],
  keyOf: KeyOf,
): { sql: string; complete: boolean } {
  let sql = '';
  let complete = true;
  for (const c of conditions) {
    const part = conditionSql(alias, c, params, keyOf);
    if (part === undefined) complete = false;
    else sql += ` AND ${part}`;
  }
  return { sql, complete };
}

/**
 * Upper-bounded counts of index entries per condition, to pick the most selective driver.
 * Counting a broad condition walks ESTIMATE_CAP index rows, so counts are kept for a while:
 * they only steer the plan, never the result, and a slightly old one steers it just as well.
 */
export class ConditionEstimates {
  private readonly kept = new Map<string, { n: number; at: number }>();

  constructor(
    private readonly statements: StatementCache,
    readonly keys: AttributeKeys,
  ) {}

  estimate(collection: string, c: Condition): number {
    if (c.path === 'id') return c.op === 'eq' ? 1 : c.op === 'in' ? c.values.length : ESTIMATE_CAP;
    const key = `${collection}\u0000${JSON.stringify(c)}`;
    const now = Date.now();
    const kept = this.kept.get(key);
    if (kept && now - kept.at < ESTIMATE_TTL_MS) return kept.n;
    const v = valueSql('value', c);
    const row = this.statements
      .get(
        `SELECT count(*) AS n FROM (SELECT 1 FROM attr_index WHERE key = ? AND ${v.sql} LIMIT ${ESTIMATE_CAP})`,
      )
      .get(this.keys.get(collection, c.path), ...v.params) as { n: number };
    const n = row.n + (c.op === 'eq' ? 0 : 0.5); // equality keeps id order; prefer it on ties
    if (this.kept.size >= ESTIMATES_KEPT) this.kept.clear();
    this.kept.set(key, { n, at: now });
    return n;
  }

  /** True when a condition holds for a sizeable share (2% or more) of the collection. */
  isBroad(collection: string, c: Condition): boolean {
    if (this.estimate(collection, c) < ESTIMATE_CAP) return false;
    return ESTIMATE_CAP / Math.max(recordCount(this.statements, collection), 1) >= 0.02;
  }
}

/** SQL selecting the distinct ids (as `x.id`) of the records satisfying every index condition. */
export interface CandidateIds {
  from: string;
  where: string[];
  params: SqlParam[];
  /** Whether SQL checks every condition (otherwise the filter must check the rest). */
  complete: boolean;
  /** Whether the ids come in id order without a sort. */
  ordered: boolean;
  /** The condition the SQL reads the index by (none when every record is a candidate). */
  driver?: Condition;
  /**
   * For a driver `$in` of at most MERGED_VALUES values: the same candidates as one SQL per value,
   * each in id order, for a reader to merge instead of sorting them all (not `ordered`).
   */
  perValue?: Array<{ where: string[]; params: SqlParam[] }>;
}

/** The most values of a driving `$in` whose candidates are read value by value and merged. */
const MERGED_VALUES = 32;

/** The candidate ids of a plan, driven by its most selective condition. */
export function candidateIdSql(
  estimates: ConditionEstimates,
  collection: string,
  plan: IndexPlan,
): CandidateIds {
  const params: SqlParam[] = [];
  if (plan.conditions.length === 0) {
    params.push(collection);
    return { from: 'docs x', where: ['x.collection = ?'], params, complete: true, ordered: true };
  }
  let driverIndex = 0;
  if (plan.conditions.length > 1) {
    const counts = plan.conditions.map((c) => estimates.estimate(collection, c));
    driverIndex = counts.indexOf(Math.min(...counts));
  }
  const driver = plan.conditions[driverIndex]!;
  const where: string[] = [];
  let from: string;
  if (driver.path === 'id') {
    from = 'docs x';
    where.push('x.collection = ?');
    params.push(collection);
    const v = valueSql('x.id', driver);
    where.push(v.sql);
    params.push(...v.params);
  } else {
    from = 'attr_index x';
    where.push('x.key = ?');
    params.push(estimates.keys.get(collection, driver.path));
    const v = valueSql('x.value', driver);
    where.push(v.sql);
    params.push(...v.params);
  }
  const driven = params.length;
  const rest = conditionsSql(
    'x',
    plan.conditions.filter((_, i) => i !== driverIndex),
    params,
    estimates.keys.of(collection),
  );
  if (rest.sql) where.push(rest.sql.slice(' AND '.length));
  // Equality on an attribute walks its index in id order; $in and ranges need a sort.
  const ordered = driver.path === 'id' || driver.op === 'eq';
  const candidates: CandidateIds = { from, where, params, complete: rest.complete, ordered, driver };
  if (driver.path !== 'id' && driver.op === 'in' && driver.values.length <= MERGED_VALUES)
    candidates.perValue = driver.values.map((value) => ({
      where: [where[0]!, 'x.value = ?', ...where.slice(2)],
      params: [params[0]!, value, ...params.slice(driven)],
    }));
  return candidates;
}
