/**
 * Candidate ids from the embedded search index: a predicate becomes an FTS5 MATCH on the strings
 * (match-plan.ts: a few of the rarest trigrams, chosen by their document counts); the strings it
 * finds at the predicate's path are tested with the predicate's regex, and those that pass are
 * followed through the map to the records holding them, themselves or through their group.
 */
import type { Statement } from 'better-sqlite3';
import type { Candidates, IndexablePredicate } from '../port.ts';
import type { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import { indexedPathScope, wellFormed } from '../indexed-values.ts';
import { trigramQueryOfPredicate } from '../predicates.ts';
import type { TrigramQuery } from '../regex/trigram-query.ts';
import { WORD_PATTERN } from '../words.ts';
import { compileRegex } from '../../src/store/filter.ts';
import { matchPlanOf, type MatchPlan } from './match-plan.ts';

const quote = (s: string) => `"${wellFormed(s).replace(/"/g, '""')}"`;

/** A trigram query as an FTS5 MATCH expression of quoted substrings (FTS5 phrases), as written. */
export function ftsMatchOf(q: TrigramQuery): string {
  if (q.op === 'all' || q.op === 'none') throw new Error(`${q.op} has no MATCH form`);
  const parts = [...q.atoms.map(quote), ...q.subs.map((s) => `(${ftsMatchOf(s)})`)];
  return parts.join(q.op === 'and' ? ' AND ' : ' OR ');
}

/** Keeps the map rows of a string at the predicate's paths; binds (1 or null, JSON array of path keys). */
const PATH_FILTER = '(? IS NULL OR v.path IN (SELECT value FROM json_each(?)))';

/** Strings a MATCH finds that are held at the predicate's paths; binds (MATCH, PATH_FILTER's, limit). */
const MATCHING_STRINGS =
  'SELECT f.rowid AS rowid, s.value AS value FROM search_trigram f JOIN search_strings s ON s.rowid = f.rowid ' +
  `WHERE search_trigram MATCH ? AND EXISTS (SELECT 1 FROM search_values v WHERE v.string = f.rowid AND ${PATH_FILTER}) LIMIT +?`;

/**
 * The test a stored string must pass to hold a match of a `$regex`: the store's own compiled
 * regex. A string holding U+FFFD may have held a lone surrogate before it was stored, which the
 * regex may match and the stored text not: it is kept untested.
 */
function stringTest(predicate: { pattern: string; flags: string }): (value: string) => boolean {
  let re: ReturnType<typeof compileRegex>;
  try {
    re = compileRegex(predicate.pattern, predicate.flags);
  } catch {
    return () => true; // the filter refuses it before any read; never narrower than the index
  }
  return (value) => value.includes('\uFFFD') || re.test(value);
}

/** What a predicate's MATCH plan is kept by. */
function planKey(predicate: IndexablePredicate): string {
  return predicate.kind === 'regex'
    ? `r\u0000${predicate.flags}\u0000${predicate.pattern}`
    : `${predicate.kind[0]}\u0000${predicate.text}`;
}

/** The MATCH of a predicate's text, whatever its path: 'none' when nothing can match, null when the index cannot narrow. */
function planOf(
  predicate: IndexablePredicate,
  frequency: (trigram: string) => number,
): MatchPlan | 'none' | null {
  if (predicate.kind === 'words') {
    // A word holds its own trigrams (the tokenizer folds case on both sides); words shorter than
    // a trigram cannot narrow. A superset: the store decides.
    const long = [...predicate.text.matchAll(WORD_PATTERN)]
      .map((m) => m[0].replace(/[A-Z]+/g, (c) => c.toLowerCase()))
      .filter((w) => [...w].length >= 3);
    return long.length === 0 ? null : matchPlanOf({ op: 'and', atoms: long, subs: [] }, frequency);
  }
  const query = trigramQueryOfPredicate(predicate);
  return query.op === 'none' ? 'none' : matchPlanOf(query, frequency);
}

/**
 * A MATCH planned to find more strings than this is run on another thread when the index can
 * (`readOffThread`): FTS5 reads every term's doclist whole, about 0.75 us per string at 10^6
 * records, and a broad plan (`description ~ /soil/`: 800,000 strings) held the event loop for
 * 0.5-0.85 s warm, several seconds cold. Rowid ranges do not shorten it, so it cannot be sliced.
 */
export const OFF_THREAD_STRINGS = 50_000;

const FREQUENCY_TTL_MS = 5 * 60_000;
const FREQUENCY_CACHE_SIZE = 200_000;
/** MATCH plans kept (by predicate text). */
const PLANS_KEPT = 1000;

/** Finds candidates in the index's tables; keeps the trigram counts it has read, and its plans, for a while. */
export class FtsCandidates {
  private readonly frequencies = new Map<string, { count: number; at: number }>();
  private readonly plans = new Map<string, { plan: MatchPlan | 'none' | null; at: number }>();

  /**
   * @param readOffThread runs one statement on another thread's read-only connection to the
   *   index's file, answering its rows as arrays (none: every read runs here).
   */
  /** Statements run on the other thread (`readOffThread`). */
  readsOffThread = 0;

  /**
   * @param readOffThread runs one statement on another thread's read-only connection to the
   *   index's file, answering its rows as arrays (none: every read runs here).
   * @param offThreadStrings a MATCH planned to find more strings runs there (OFF_THREAD_STRINGS).
   */
  constructor(
    private readonly statements: StatementCache,
    private readonly readOffThread?: (sql: string, params: unknown[]) => Promise<unknown[][]>,
    private readonly offThreadStrings = OFF_THREAD_STRINGS,
  ) {}

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  /** Candidates for one predicate, or ALL past `limit` (see `SearchIndex.candidates`). */
  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    const plan = this.matchPlan(predicate);
    if (plan === 'none') return { all: false, ids: new Set() };
    if (plan === null) return { all: true };
    const scope = indexedPathScope(wellFormed(predicate.path));
    const pathKeys =
      scope === ''
        ? null
        : (this.stmt('SELECT rowid FROM search_paths WHERE path = ? OR (path > ? AND path < ?)')
            .pluck()
            .all(scope, `${scope}.`, `${scope}/`) as number[]);
    // No record holds a string at that path: nothing can match.
    if (pathKeys !== null && pathKeys.length === 0) return { all: false, ids: new Set() };
    const pathParams = [pathKeys && 1, JSON.stringify(pathKeys ?? [])];
    const strings = await this.matchingStrings(plan, predicate, pathParams, limit);
    if (strings === null) return { all: true };
    // The map rows of those strings (index only): more than twice `limit` means the set is too
    // large to help, decided before any record is looked up. Rows of other collections can only
    // make the index give up early, which is always safe.
    const owners = this.stmt(
      'SELECT v.record FROM json_each(?) s CROSS JOIN search_values v ON v.string = s.value ' +
        `WHERE ${PATH_FILTER} LIMIT +?`,
    )
      .pluck()
      .all(JSON.stringify(strings), ...pathParams, limit * 2 + 1) as number[];
    if (owners.length > limit * 2) return { all: true };
    return this.idsOfOwners(collection, owners, limit);
  }

  /** The predicate's MATCH plan (`planOf`), kept as long as the trigram counts it was chosen with. */
  private matchPlan(predicate: IndexablePredicate): MatchPlan | 'none' | null {
    const key = planKey(predicate);
    const now = Date.now();
    const kept = this.plans.get(key);
    if (kept && now - kept.at < FREQUENCY_TTL_MS) return kept.plan;
    const plan = planOf(predicate, (t) => this.trigramFrequency(t, now));
    if (this.plans.size >= PLANS_KEPT) this.plans.clear();
    this.plans.set(key, { plan, at: now });
    return plan;
  }

  /**
   * Reads the trigram counts the predicate's MATCH plan will ask for and that are not kept, one
   * per turn of the event loop: each walks the trigram's doclist, tens of ms for a common one at
   * 10^6 strings, and a plan asks for many. `candidates` then finds them kept.
   */
  async prepare(predicate: IndexablePredicate): Promise<void> {
    const kept = this.plans.get(planKey(predicate));
    if (kept && Date.now() - kept.at < FREQUENCY_TTL_MS) return;
    // A plan asks for counts depending on the counts it got: ask again with those read, a few times.
    for (let round = 0; round < 4; round++) {
      const now = Date.now();
      const missing = new Set<string>();
      planOf(predicate, (t) => {
        const count = this.keptFrequency(t, now);
        if (count === undefined) missing.add(t);
        return count ?? 1;
      });
      if (missing.size === 0) return;
      for (const t of missing) {
        this.trigramFrequency(t, Date.now());
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  }

  /**
   * Keys of the strings at the predicate's paths that the MATCH finds and, for a `$regex`, that
   * the regex matches (as the store's filter runs it): a string it does not match cannot make a
   * record match there. Null past `2 * limit` strings: each has a holder, so the owners are past
   * the limit too.
   */
  private async matchingStrings(
    plan: MatchPlan,
    predicate: IndexablePredicate,
    pathParams: unknown[],
    limit: number,
  ): Promise<number[] | null> {
    const params = [plan.match, ...pathParams, limit * 2 + 1];
    const rows = ((plan.strings > this.offThreadStrings &&
      (await this.offThread(MATCHING_STRINGS, params))) ||
      this.stmt(MATCHING_STRINGS)
        .raw()
        .all(...params)) as Array<[number, string]>;
    if (rows.length > limit * 2) return null;
    const test = predicate.kind === 'regex' ? stringTest(predicate) : undefined;
    const keys: number[] = [];
    for (const [rowid, value] of rows) if (test === undefined || test(value)) keys.push(rowid);
    return keys;
  }

  /** A statement's rows read on the other thread, or undefined when that thread cannot read them. */
  private async offThread(sql: string, params: unknown[]): Promise<unknown[][] | undefined> {
    if (!this.readOffThread) return undefined;
    try {
      const rows = await this.readOffThread(sql, params);
      this.readsOffThread++;
      return rows;
    } catch {
      return undefined;
    }
  }

  /** Ids of the collection's records among map owners: records themselves, and members of groups. */
  private idsOfOwners(collection: string, owners: number[], limit: number): Candidates {
    const records = new Set<number>();
    const groups = new Set<number>();
    for (const owner of owners) (owner > 0 ? records : groups).add(Math.abs(owner));
    // Records holding a matching string themselves, then the members of groups holding one.
    const ids = new Set<string>();
    for (const [sql, keys] of [
      [
        'SELECT r.id FROM json_each(?) k CROSS JOIN search_records r ON r.rowid = k.value WHERE r.collection = ?',
        records,
      ],
      [
        'SELECT r.id FROM json_each(?) g CROSS JOIN search_records r ON r.grp = g.value WHERE r.collection = ?',
        groups,
      ],
    ] as const) {
      if (keys.size === 0) continue;
      const rows = this.stmt(sql)
        .pluck()
        .iterate(JSON.stringify([...keys]), collection) as IterableIterator<string>;
      for (const id of rows) {
        ids.add(id);
        if (ids.size > limit) {
          rows.return?.();
          return { all: true };
        }
      }
    }
    return { all: false, ids };
  }

  /**
   * How many strings hold a trigram. Reading it from the vocabulary walks the trigram's doclist,
   * so counts are cached for a while: they only steer the choice of trigrams, never the result.
   */
  private trigramFrequency(trigram: string, now: number): number {
    const cached = this.keptFrequency(trigram, now);
    if (cached !== undefined) return cached;
    const count =
      (this.stmt('SELECT doc FROM search_trigram_vocab WHERE term = ?').pluck().get(trigram) as
        number | undefined) ?? 0;
    if (this.frequencies.size >= FREQUENCY_CACHE_SIZE) this.frequencies.clear();
    this.frequencies.set(trigram, { count, at: now });
    return count;
  }

  /** A trigram's count read less than FREQUENCY_TTL_MS ago. */
  private keptFrequency(trigram: string, now: number): number | undefined {
    const cached = this.frequencies.get(trigram);
    return cached && now - cached.at < FREQUENCY_TTL_MS ? cached.count : undefined;
  }
}
