/**
 * The word rule shared by the embedded index (FTS5 `unicode61`) and the Elasticsearch analyzer:
 * a word is a maximal run of Unicode letters and digits, compared in lowercase.
 */
export const WORD_PATTERN = /[\p{L}\p{N}]+/gu;

export function wordsOf(text: string): string[] {
  return [...text.toLowerCase().matchAll(WORD_PATTERN)].map((m) => m[0]);
}
