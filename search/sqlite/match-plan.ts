/**
 * A trigram query (search/regex/trigram-query.ts) as an FTS5 MATCH expression that is cheap to
 * run: a superset of the strings the query allows, chosen with the trigrams' document counts.
 *
 * FTS5 reads a doclist per term. An AND of terms costs little more than its rarest term (the
 * others are sought, not read through), but an OR merges every branch's doclist in full, and a
 * quoted phrase reads every trigram's positions. So:
 *
 * - an atom (a required substring) becomes the AND of a few of its rarest trigrams;
 * - an OR whose branches share trigrams is factored: `sample 12340 | ... | sample 12349` is
 *   `"234" AND "123" AND ("340" OR ... OR "349")`, not ten ANDs reading "123" ten times;
 * - an AND keeps its rarest parts and leaves out those that would read far more entries than the
 *   rarest one leaves strings (a broad OR beside a rare trigram narrows little and costs most).
 *
 * Leaving a part out widens the set, which is always safe: the strings found are tested with the
 * predicate itself (candidates.ts), and the records with the whole filter (the store).
 */
import { wellFormed } from '../indexed-values.ts';
import type { TrigramQuery } from '../regex/trigram-query.ts';

/** Trigrams of an AND kept at most: each one more is a seek per string of the rarest. */
const TRIGRAMS_PER_AND = 3;
/** A trigram of an AND is kept while it has at most this many times the rarest one's strings. */
const TRIGRAM_SPREAD = 16;
/** An OR beside rarer parts is kept while it has at most this many times their strings: it is read in full. */
const OR_SPREAD = 2;

/** A trigram query over single trigrams: what FTS5 evaluates. */
type Node = { op: 'tri'; t: string } | { op: 'and' | 'or'; parts: Node[] };

/** A MATCH expression and the strings it is estimated to find (an upper bound). */
export interface MatchPlan {
  match: string;
  strings: number;
}

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** The distinct trigrams of an atom, as the index stores text (lone surrogates as U+FFFD). */
function trigramsOf(atom: string): string[] {
  const chars = [...wellFormed(atom)];
  const out = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars[i]! + chars[i + 1]! + chars[i + 2]!);
  return [...out];
}

/** The query over trigrams; null where it allows every string (an atom too short to narrow). */
function toNode(q: TrigramQuery): Node | null {
  if (q.op === 'all' || q.op === 'none') return null;
  const parts: Array<Node | null> = [
    ...q.atoms.map((a): Node | null => {
      const ts = trigramsOf(a);
      if (ts.length === 0) return null;
      return ts.length === 1
        ? { op: 'tri', t: ts[0]! }
        : { op: 'and', parts: ts.map((t) => ({ op: 'tri', t })) };
    }),
    ...q.subs.map(toNode),
  ];
  if (q.op === 'or') return parts.some((p) => p === null) ? null : { op: 'or', parts: parts as Node[] };
  const kept = parts.filter((p): p is Node => p !== null);
  return kept.length === 0 ? null : { op: 'and', parts: kept };
}

/** The trigrams every string a node allows holds, when the node is a trigram or an AND of them. */
function requiredTrigrams(n: Node): Set<string> | null {
  if (n.op === 'tri') return new Set([n.t]);
  if (n.op === 'and' && n.parts.every((p) => p.op === 'tri'))
    return new Set(n.parts.map((p) => (p as { t: string }).t));
  return null;
}

/** `A1 OR A2 ...` of ANDs sharing trigrams C as `C AND (A1 - C OR A2 - C ...)`; null: nothing shared. */
function factored(or: { parts: Node[] }): Node | null {
  const sets = or.parts.map(requiredTrigrams);
  if (sets.length < 2 || sets.some((s) => s === null)) return null;
  const common = [...sets[0]!].filter((t) => sets.every((s) => s!.has(t)));
  if (common.length === 0) return null;
  const rests: Node[] = [];
  for (const s of sets) {
    const rest = [...s!].filter((t) => !common.includes(t));
    // A branch holding only the shared trigrams allows whatever they allow: the OR adds nothing.
    if (rest.length === 0) return { op: 'and', parts: common.map((t) => ({ op: 'tri', t })) };
    rests.push(
      rest.length === 1
        ? { op: 'tri', t: rest[0]! }
        : { op: 'and', parts: rest.map((t) => ({ op: 'tri', t })) },
    );
  }
  return { op: 'and', parts: [...common.map((t): Node => ({ op: 'tri', t })), { op: 'or', parts: rests }] };
}

function plan(n: Node, frequency: (trigram: string) => number): MatchPlan | null {
  if (n.op === 'tri') return { match: quote(n.t), strings: frequency(n.t) };
  if (n.op === 'or') {
    const f = factored(n);
    if (f) return plan(f, frequency);
    const parts = n.parts.map((p) => plan(p, frequency));
    if (parts.some((p) => p === null)) return null;
    return {
      match: (parts as MatchPlan[]).map((p) => `(${p.match})`).join(' OR '),
      strings: (parts as MatchPlan[]).reduce((s, p) => s + p.strings, 0),
    };
  }
  // AND: nested ANDs flattened, each part planned, the rarest kept.
  const flat: Node[] = [];
  const flatten = (x: Node) => (x.op === 'and' ? x.parts.forEach(flatten) : flat.push(x));
  n.parts.forEach(flatten);
  const parts = flat
    .map((p) => ({ node: p, plan: plan(p, frequency) }))
    .filter((p): p is { node: Node; plan: MatchPlan } => p.plan !== null)
    .sort((a, b) => a.plan.strings - b.plan.strings);
  if (parts.length === 0) return null;
  const rarest = parts[0]!.plan.strings;
  const kept: MatchPlan[] = [parts[0]!.plan];
  let trigrams = parts[0]!.node.op === 'tri' ? 1 : 0;
  for (const p of parts.slice(1)) {
    if (p.node.op === 'tri') {
      if (trigrams >= TRIGRAMS_PER_AND || p.plan.strings > rarest * TRIGRAM_SPREAD) continue;
      trigrams++;
    } else if (p.plan.strings > rarest * OR_SPREAD) continue;
    kept.push(p.plan);
  }
  return {
    match: kept.map((p) => (kept.length > 1 ? `(${p.match})` : p.match)).join(' AND '),
    strings: rarest,
  };
}

/**
 * The MATCH expression for a trigram query, with `frequency` giving how many strings hold a
 * trigram; null when the query cannot narrow (it allows every string).
 */
export function matchPlanOf(q: TrigramQuery, frequency: (trigram: string) => number): MatchPlan | null {
  const node = toNode(q);
  return node === null ? null : plan(node, frequency);
}
