/**
 * From an indexable predicate to the analyses of `search/regex/`.
 */
import type { IndexablePredicate } from './port.ts';
import { trigramQueryOf, type TrigramQuery } from './regex/trigram-query.ts';
import { luceneRegexpOf, type LuceneRegexp } from './regex/lucene-regexp.ts';

/** Escapes regex metacharacters, as the compact `.search` syntax does. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A text search is a case-insensitive regex of the escaped text. */
export function regexOfPredicate(p: Exclude<IndexablePredicate, { kind: 'words' }>): {
  pattern: string;
  flags: string;
} {
  return p.kind === 'search'
    ? { pattern: escapeRegex(p.text), flags: 'i' }
    : { pattern: p.pattern, flags: p.flags };
}

export function trigramQueryOfPredicate(p: Exclude<IndexablePredicate, { kind: 'words' }>): TrigramQuery {
  const { pattern, flags } = regexOfPredicate(p);
  return trigramQueryOf(pattern, flags);
}

export function luceneRegexpOfPredicate(p: Exclude<IndexablePredicate, { kind: 'words' }>): LuceneRegexp {
  const { pattern, flags } = regexOfPredicate(p);
  return luceneRegexpOf(pattern, flags);
}
