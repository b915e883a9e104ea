/**
 * The word rule of word predicates (the Elasticsearch analyzer tokenizes the same way): a word is
 * a maximal run of Unicode letters and digits, compared in lowercase. The embedded index answers
 * them with the words' trigrams, a superset.
 */
export const WORD_PATTERN = /[\p{L}\p{N}]+/gu;

export function wordsOf(text: string): string[] {
  return [...text.toLowerCase().matchAll(WORD_PATTERN)].map((m) => m[0]);
}
