/**
 * What the Elasticsearch search index stores and asks: the settings and mappings of its indexes,
 * the stored form of a record, and the query that narrows one predicate.
 *
 * Mapping design (no nested documents, no dynamic fields):
 * - `values` (wildcard): one entry per indexed string, `path + US + value` (US = U+001F). A
 *   regexp query `PATH(\..*)?US(REGEXP)` binds the value to its path inside a single entry,
 *   which an array of plain objects could not do (their fields flatten independently), and the
 *   wildcard type verifies regexps over whole values of any length (no ignore_above).
 * - `text` (text, `nmdc_words` analyzer: the word rule of search/words.ts, words cut at 1,000
 *   characters so none breaks Lucene's term limit) and `paths` (keyword): word predicates. Words
 *   are not bound to their path (a superset; the source of truth decides).
 * - `fingerprint` (keyword): content hash for check-index.
 */
import type { Doc } from '../../src/store/port.ts';
import type { IndexablePredicate } from '../port.ts';
import { fingerprintOf, indexedPathScope, indexedValuesOf } from '../indexed-values.ts';
import { luceneRegexpOfPredicate } from '../predicates.ts';
import { constrainsOnlyLength } from '../regex/lucene-regexp.ts';
import { wordsOf } from '../words.ts';

/** Separates path and value inside a `values` entry. */
export const PATH_SEPARATOR = '\u001f';
/** Words longer than this are cut in the index and in queries alike (Lucene refuses terms over 32,766 bytes). */
const MAX_WORD_LENGTH = 1000;

/**
 * Longest regexp Elasticsearch accepts (its `index.max_regex_length`, set explicitly on our
 * indexes); a longer translation is not sent and the index declines to narrow.
 */
export const MAX_REGEX_LENGTH = 1000;

export const INDEX_SETTINGS = {
  number_of_shards: 1,
  max_regex_length: MAX_REGEX_LENGTH,
  analysis: {
    tokenizer: { nmdc_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}]+' } },
    filter: { nmdc_word_length: { type: 'truncate', length: MAX_WORD_LENGTH } },
    analyzer: {
      nmdc_words: { type: 'custom', tokenizer: 'nmdc_words', filter: ['lowercase', 'nmdc_word_length'] },
    },
  },
};

export const INDEX_MAPPINGS = {
  dynamic: false,
  properties: {
    fingerprint: { type: 'keyword' },
    paths: { type: 'keyword' },
    values: { type: 'wildcard' },
    text: { type: 'text', analyzer: 'nmdc_words' },
  },
};

/** The stored form of a record. */
export function documentOf(doc: Doc): {
  fingerprint: string;
  paths: string[];
  values: string[];
  text: string[];
} {
  const values = indexedValuesOf(doc);
  return {
    fingerprint: fingerprintOf(doc),
    paths: [...new Set(values.map((v) => v.path))],
    values: values.map((v) => `${v.path}${PATH_SEPARATOR}${v.value}`),
    text: [...new Set(values.map((v) => v.value))],
  };
}

const escapeLucene = (s: string) => s.replace(/[^A-Za-z0-9_]/g, (c) => `\\${c}`);

/** The query that narrows one predicate, or null when it cannot narrow. */
export function queryOf(predicate: IndexablePredicate): Record<string, unknown> | null {
  const scope = indexedPathScope(predicate.path);
  if (predicate.kind === 'words') {
    const words = wordsOf(predicate.text);
    if (words.length === 0) return null;
    return {
      bool: {
        filter: [
          { match: { text: { query: words.join(' '), operator: 'and' } } },
          ...(scope === '' ? [] : [{ prefix: { paths: { value: scope } } }]),
        ],
      },
    };
  }
  const lucene = luceneRegexpOfPredicate(predicate);
  if (constrainsOnlyLength(lucene.regexp)) return null;
  const pathPart = scope === '' ? '.*' : `${escapeLucene(scope)}(\\..*)?`;
  const value = `${pathPart}${PATH_SEPARATOR}(${lucene.regexp})`;
  if (value.length > MAX_REGEX_LENGTH) return null;
  return {
    regexp: {
      values: {
        value,
        flags: 'NONE',
        case_insensitive: lucene.caseInsensitive,
        max_determinized_states: 10_000,
      },
    },
  };
}
