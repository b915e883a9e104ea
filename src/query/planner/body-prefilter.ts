/**
 * A cheap first test of a record's stored JSON text, before it is parsed: the substrings every
 * match of the filter's text predicates must contain (the trigram analysis of `search/regex/`).
 * A record whose text lacks them cannot match, so a walk can skip it without parsing; a record
 * that has them is parsed and decided by the full filter. A superset, never a narrower set.
 *
 * Why the stored text holds the value's substrings verbatim: the body is `JSON.stringify` of the
 * record, which writes every character as itself except `"`, `\`, control characters and lone
 * surrogates; atoms with those are left out. Case: a case-sensitive `$regex` requires its
 * literals as written (`exact` atoms, SQLite GLOB, which also runs faster than LIKE); the others'
 * atoms are lowercase and the test folds ASCII letters only (SQLite LIKE). A case-insensitive
 * regex may match `k` with the Kelvin sign and `s` with the long s, which no ASCII fold sees, so
 * caseless atoms are cut at those letters.
 */
import type { IndexablePredicate } from '../../../search/port.ts';
import type { Conjunct } from '../../../search/filter-predicates.ts';
import { regexOfPredicate } from '../../../search/predicates.ts';
import { trigramQueryOf, type TrigramQuery } from '../../../search/regex/trigram-query.ts';
import { WORD_PATTERN } from '../../../search/words.ts';

/**
 * A boolean test of the record text; `true`/`false` are constants. `atoms` are lowercase and
 * tested with ASCII letters folded, `exact` atoms as written.
 */
export type BodyTest =
  true | false | { op: 'and' | 'or'; atoms: string[]; exact: string[]; subs: BodyTest[] };

/** Atoms shorter than this pass too many records to be worth a test. */
const MIN_ATOM = 3;
/** Characters JSON.stringify writes as escapes (and so never verbatim in the text). */
const ESCAPED = /["\\\u0000-\u001f\uD800-\uDFFF]/;

function usableAtoms(atom: string, caseless: boolean): string[] {
  if (ESCAPED.test(atom)) return [];
  const pieces = caseless ? atom.split(/[ks]/) : [atom];
  return pieces.filter((p) => [...p].length >= MIN_ATOM);
}

type Parts = { atoms: string[]; exact: string[] };

function combine(op: 'and' | 'or', given: Parts, subs: BodyTest[]): BodyTest {
  const atoms = [...given.atoms];
  const exact = [...given.exact];
  const kept: BodyTest[] = [];
  for (const s of subs) {
    if (s === (op === 'and')) continue; // neutral element
    if (s === (op !== 'and')) return s; // absorbing element
    if (s === true || s === false) continue;
    if (s.op === op || (s.atoms.length + s.exact.length === 1 && s.subs.length === 0)) {
      atoms.push(...s.atoms);
      exact.push(...s.exact);
      kept.push(...s.subs);
    } else kept.push(s);
  }
  if (atoms.length === 0 && exact.length === 0 && kept.length === 0) return op === 'and';
  if (atoms.length === 0 && exact.length === 0 && kept.length === 1) return kept[0]!;
  return { op, atoms: [...new Set(atoms)], exact: [...new Set(exact)], subs: kept };
}

/** A trigram query's atoms as a test: folded (`caseless`) or as written (`exact`). */
function ofTrigramQuery(q: TrigramQuery, caseless: boolean, exact: boolean): BodyTest {
  if (q.op === 'all') return true;
  if (q.op === 'none') return false;
  const subs = q.subs.map((s) => ofTrigramQuery(s, caseless, exact));
  const parts = (atoms: string[]): Parts => (exact ? { atoms: [], exact: atoms } : { atoms, exact: [] });
  if (q.op === 'and') {
    return combine('and', parts(q.atoms.flatMap((a) => usableAtoms(a, caseless))), subs);
  }
  // Under OR an atom that cannot be tested makes the whole OR pass.
  const atoms: string[] = [];
  for (const a of q.atoms) {
    const usable = usableAtoms(a, caseless);
    if (usable.length === 0) return true;
    // A cut atom is the AND of its pieces.
    if (usable.length === 1) atoms.push(usable[0]!);
    else subs.push({ op: 'and', ...parts(usable), subs: [] });
  }
  return combine('or', parts(atoms), subs);
}

export function bodyTestOfPredicate(p: IndexablePredicate): BodyTest {
  if (p.kind === 'words') {
    const words = [...p.text.matchAll(WORD_PATTERN)].map((m) => m[0].toLowerCase());
    return combine('and', { atoms: words.flatMap((w) => usableAtoms(w, true)), exact: [] }, []);
  }
  const { pattern, flags } = regexOfPredicate(p);
  // A case-sensitive regex keeps its literals' case; the others fold it.
  const caseless = p.kind !== 'regex' || flags.includes('i');
  return ofTrigramQuery(trigramQueryOf(pattern, flags, !caseless), caseless, !caseless);
}

/** The test every match of the AND of `conjuncts` passes. */
export function bodyTestOf(conjuncts: Conjunct[]): BodyTest {
  const parts = conjuncts.map((c): BodyTest =>
    c.kind === 'predicate'
      ? bodyTestOfPredicate(c.predicate)
      : combine(
          'or',
          { atoms: [], exact: [] },
          c.branches.map((b) => bodyTestOf(b)),
        ),
  );
  return combine('and', { atoms: [], exact: [] }, parts);
}

/** Lowercases ASCII letters only, as SQLite's LIKE folds them. */
export function foldAscii(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/**
 * The test as a JavaScript function of the record text (estimates on a sample); `folded` gives
 * the text's `foldAscii`, when the caller keeps it (folding costs more than testing).
 */
export function bodyTestFunction(test: BodyTest): (text: string, folded?: () => string) => boolean {
  const run = testOn(test);
  return (text, folded) => {
    if (folded) return run(text, folded);
    let mine: string | undefined;
    return run(text, () => (mine ??= foldAscii(text)));
  };
}

function testOn(test: BodyTest): (text: string, folded: () => string) => boolean {
  if (test === true || test === false) return () => test;
  const atoms = test.atoms.map(foldAscii);
  const exact = test.exact;
  const subs = test.subs.map(testOn);
  return test.op === 'and'
    ? (text, folded) =>
        exact.every((a) => text.includes(a)) &&
        atoms.every((a) => folded().includes(a)) &&
        subs.every((s) => s(text, folded))
    : (text, folded) =>
        exact.some((a) => text.includes(a)) ||
        atoms.some((a) => folded().includes(a)) ||
        subs.some((s) => s(text, folded));
}

/** `*`, `?` and `[` stand for themselves inside brackets in a GLOB pattern. */
const globLiteral = (s: string) => s.replace(/[*?[]/g, '[$&]');

/** The test as SQL on a text column, with its parameters (LIKE with `\` as escape, GLOB). */
export function bodyTestSql(test: BodyTest, column: string): { sql: string; params: string[] } {
  if (test === true) return { sql: '1', params: [] };
  if (test === false) return { sql: '0', params: [] };
  const parts: string[] = [];
  const params: string[] = [];
  for (const atom of test.exact) {
    parts.push(`${column} GLOB +?`);
    params.push(`*${globLiteral(atom)}*`);
  }
  for (const atom of test.atoms) {
    parts.push(`${column} LIKE +? ESCAPE '\\'`);
    params.push(`%${atom.replace(/[\\%_]/g, '\\$&')}%`);
  }
  for (const sub of test.subs) {
    const s = bodyTestSql(sub, column);
    parts.push(`(${s.sql})`);
    params.push(...s.params);
  }
  return { sql: parts.join(test.op === 'and' ? ' AND ' : ' OR '), params };
}

/** One line for plans and logs, e.g. `="Toolik" AND "tundra" AND ("kel" OR "col")` (`=`: case as written). */
export function describeBodyTest(test: BodyTest): string {
  if (test === true) return 'true';
  if (test === false) return 'false';
  const parts = [
    ...test.exact.map((a) => `=${JSON.stringify(a)}`),
    ...test.atoms.map((a) => JSON.stringify(a)),
    ...test.subs.map((s) => `(${describeBodyTest(s)})`),
  ];
  return parts.join(test.op === 'and' ? ' AND ' : ' OR ');
}
