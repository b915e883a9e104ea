/**
 * Candidate ids from the embedded search index: a predicate becomes an FTS5 MATCH on the strings
 * (each atom narrowed to a few of its rarest trigrams), followed through the map to the records
 * holding a matching string at the predicate's path, themselves or through their group.
 */
import type { Statement } from 'better-sqlite3';
import type { Candidates, IndexablePredicate } from '../port.ts';
import type { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import { indexedPathScope, wellFormed } from '../indexed-values.ts';
import { trigramQueryOfPredicate } from '../predicates.ts';
import type { TrigramQuery } from '../regex/trigram-query.ts';
import { WORD_PATTERN } from '../words.ts';

const quote = (s: string) => `"${wellFormed(s).replace(/"/g, '""')}"`;

/**
 * A trigram query as an FTS5 MATCH expression. Atoms are quoted substrings (FTS5 phrases), or,
 * with `rewriteAtom`, whatever it makes of them (a few of their rarest trigrams).
 */
export function ftsMatchOf(q: TrigramQuery, rewriteAtom: (atom: string) => string = quote): string {
  if (q.op === 'all' || q.op === 'none') throw new Error(`${q.op} has no MATCH form`);
  const parts = [...q.atoms.map(rewriteAtom), ...q.subs.map((s) => `(${ftsMatchOf(s, rewriteAtom)})`)];
  return parts.join(q.op === 'and' ? ' AND ' : ' OR ');
}

/** Trigrams of an atom used in MATCH: a phrase must read every trigram's doclist; a few rare ones cost far less. */
const TRIGRAMS_PER_ATOM = 3;
const FREQUENCY_TTL_MS = 5 * 60_000;
const FREQUENCY_CACHE_SIZE = 200_000;

/** Finds candidates in the index's tables; keeps the trigram counts it has read for a while. */
export class FtsCandidates {
  private readonly frequencies = new Map<string, { count: number; at: number }>();

  constructor(private readonly statements: StatementCache) {}

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  /** Candidates for one predicate, or ALL past `limit` (see `SearchIndex.candidates`). */
  candidates(collection: string, predicate: IndexablePredicate, limit: number): Candidates {
    let match: string;
    if (predicate.kind === 'words') {
      // A word holds its own trigrams (the tokenizer folds case on both sides); words shorter than
      // a trigram cannot narrow. A superset: the store decides.
      const long = [...predicate.text.matchAll(WORD_PATTERN)]
        .map((m) => m[0])
        .filter((w) => [...w].length >= 3);
      if (long.length === 0) return { all: true };
      match = long.map((w) => this.rarestTrigrams(w)).join(' AND ');
    } else {
      const query = trigramQueryOfPredicate(predicate);
      if (query.op === 'all') return { all: true };
      if (query.op === 'none') return { all: false, ids: new Set() };
      match = ftsMatchOf(query, (atom) => this.rarestTrigrams(atom));
    }
    const scope = indexedPathScope(wellFormed(predicate.path));
    const pathKeys =
      scope === ''
        ? null
        : (this.stmt('SELECT rowid FROM search_paths WHERE path = ? OR (path > ? AND path < ?)')
            .pluck()
            .all(scope, `${scope}.`, `${scope}/`) as number[]);
    // No record holds a string at that path: nothing can match.
    if (pathKeys !== null && pathKeys.length === 0) return { all: false, ids: new Set() };
    const pathFilter = '(? IS NULL OR v.path IN (SELECT value FROM json_each(?)))';
    const pathParams = [pathKeys && 1, JSON.stringify(pathKeys ?? [])];
    // The map rows of matching strings, read once (index only): more than twice `limit` means the
    // set is too large to help, decided before any record is looked up. Rows of other collections
    // can only make the index give up early, which is always safe.
    const owners = this.stmt(
      'SELECT v.record FROM search_trigram f JOIN search_values v ON v.string = f.rowid ' +
        `WHERE search_trigram MATCH ? AND ${pathFilter} LIMIT ?`,
    )
      .pluck()
      .all(match, ...pathParams, limit * 2 + 1) as number[];
    if (owners.length > limit * 2) return { all: true };
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
  private trigramFrequency(trigram: string): number {
    const now = Date.now();
    const cached = this.frequencies.get(trigram);
    if (cached && now - cached.at < FREQUENCY_TTL_MS) return cached.count;
    const count =
      (this.stmt('SELECT doc FROM search_trigram_vocab WHERE term = ?').pluck().get(trigram) as
        number | undefined) ?? 0;
    if (this.frequencies.size >= FREQUENCY_CACHE_SIZE) this.frequencies.clear();
    this.frequencies.set(trigram, { count, at: now });
    return count;
  }

  /**
   * The AND of an atom's rarest trigrams (a superset of the phrase; the source of truth decides).
   * Document counts come from the FTS5 vocabulary; a trigram no string has makes the atom false.
   */
  private rarestTrigrams(atom: string): string {
    const chars = [...atom];
    if (chars.length <= 3) return quote(atom);
    const seen = new Map<string, number>();
    for (let i = 0; i + 3 <= chars.length; i++) {
      const t = chars[i]! + chars[i + 1]! + chars[i + 2]!;
      if (!seen.has(t)) seen.set(t, this.trigramFrequency(t));
    }
    const rarest = [...seen.entries()].sort((a, b) => a[1] - b[1]).slice(0, TRIGRAMS_PER_ATOM);
    return `(${rarest.map(([t]) => quote(t)).join(' AND ')})`;
  }
}
