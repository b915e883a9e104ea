/**
 * Soundness of the regex analyses: whenever a regex matches a string, the string satisfies the
 * trigram query and the Lucene regexp (parsed and matched with Lucene's rules) matches it too.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { satisfiesTrigramQuery, trigramQueryOf, trigramsOf } from '../../search/regex/trigram-query.ts';
import { luceneRegexpOf } from '../../search/regex/lucene-regexp.ts';
import { compileLuceneRegexp } from '../support/lucene-regexp.ts';

const ALPHABET = ['a', 'b', 'c', 'd', 'A', 'B', '0', '1', ' ', '-', '.', 'k', 'K'];

/** A regex AST node: its source text and a way to produce a string it (usually) matches. */
interface Node {
  src: string;
  sample(pick: () => number): string;
}

const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
const char = fc.constantFrom(...ALPHABET);

const literal = fc.array(char, { minLength: 1, maxLength: 5 }).map<Node>((cs) => ({
  src: cs.map(escape).join(''),
  sample: () => cs.join(''),
}));
const charClass = fc
  .record({ chars: fc.uniqueArray(char, { minLength: 1, maxLength: 4 }), negative: fc.boolean() })
  .map<Node>(({ chars, negative }) => {
    const outside = ALPHABET.filter((c) => !chars.includes(c));
    const pool = negative ? (outside.length ? outside : ['z']) : chars;
    return {
      src: `[${negative ? '^' : ''}${chars.map(escape).join('')}]`,
      sample: (pick) => pool[pick() % pool.length]!,
    };
  });
const range = fc.constantFrom<Node>(
  { src: '[a-c]', sample: (pick) => 'abc'[pick() % 3]! },
  { src: '[0-9]', sample: (pick) => String(pick() % 10) },
);
const shorthand = fc.constantFrom<Node>(
  { src: '.', sample: (pick) => ALPHABET[pick() % ALPHABET.length]! },
  { src: '\\d', sample: (pick) => String(pick() % 10) },
  { src: '\\w', sample: (pick) => 'ab_1'[pick() % 4]! },
  { src: '\\s', sample: () => ' ' },
);
const anchor = fc.constantFrom<Node>(
  { src: '^', sample: () => '' },
  { src: '$', sample: () => '' },
  { src: '\\b', sample: () => '' },
);

const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { maxDepth: 4, depthIdentifier: 'regex' },
    literal,
    literal,
    charClass,
    range,
    shorthand,
    anchor,
    fc.array(tie('node'), { minLength: 2, maxLength: 4 }).map<Node>((parts) => ({
      src: parts.map((p) => p.src).join(''),
      sample: (pick) => parts.map((p) => p.sample(pick)).join(''),
    })),
    fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map<Node>((parts) => ({
      src: `(?:${parts.map((p) => p.src).join('|')})`,
      sample: (pick) => parts[pick() % parts.length]!.sample(pick),
    })),
    fc
      .record({ inner: tie('node'), op: fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '*?') })
      .map<Node>(({ inner, op }) => ({
        src: `(${inner.src})${op}`,
        sample: (pick) => {
          const [min, max] = {
            '*': [0, 3],
            '+': [1, 3],
            '?': [0, 1],
            '{2}': [2, 2],
            '{1,3}': [1, 3],
            '*?': [0, 2],
          }[op]!;
          const n = min! + (pick() % (max! - min! + 1));
          return Array.from({ length: n }, () => inner.sample(pick)).join('');
        },
      })),
  ),
}));

const flipCase = (s: string, pick: () => number) =>
  [...s].map((c) => (pick() % 2 ? c.toUpperCase() : c.toLowerCase())).join('');

const scenario = fc.record({
  regex: node,
  ignoreCase: fc.boolean(),
  prefix: fc.array(char, { maxLength: 4 }).map((a) => a.join('')),
  suffix: fc.array(char, { maxLength: 4 }).map((a) => a.join('')),
  seed: fc.integer({ min: 1, max: 2 ** 30 }),
  noise: fc.array(char, { maxLength: 12 }).map((a) => a.join('')),
});

function picker(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s >>> 8;
  };
}

describe('regex analysis soundness', () => {
  it('every string a random regex matches satisfies its trigram query and its Lucene regexp', () => {
    let matched = 0;
    fc.assert(
      fc.property(scenario, ({ regex, ignoreCase, prefix, suffix, seed, noise }) => {
        const pick = picker(seed);
        const flags = ignoreCase ? 'i' : '';
        const js = new RegExp(regex.src, flags);
        const sampled = prefix + regex.sample(pick) + suffix;
        const query = trigramQueryOf(regex.src, flags);
        const lucene = luceneRegexpOf(regex.src, flags);
        const luceneMatcher = compileLuceneRegexp(lucene.regexp, lucene.caseInsensitive);
        for (const candidate of [sampled, ignoreCase ? flipCase(sampled, pick) : sampled, noise]) {
          if (!js.test(candidate)) continue;
          matched++;
          expect(
            satisfiesTrigramQuery(query, trigramsOf(candidate)),
            `${regex.src} on ${JSON.stringify(candidate)}`,
          ).toBe(true);
          expect(luceneMatcher.matches(candidate), `${lucene.regexp} on ${JSON.stringify(candidate)}`).toBe(
            true,
          );
        }
      }),
      { seed: 20240611, numRuns: 4000 },
    );
    // The property must not hold vacuously.
    expect(matched).toBeGreaterThan(2000);
  });

  it('narrows most literal-bearing patterns (the query is not trivially ALL)', () => {
    let narrowed = 0;
    fc.assert(
      fc.property(fc.array(char, { minLength: 3, maxLength: 8 }), (cs) => {
        const q = trigramQueryOf(cs.map(escape).join(''));
        if (q.op !== 'all') narrowed++;
      }),
      { seed: 7, numRuns: 300 },
    );
    expect(narrowed).toBe(300);
  });
});
