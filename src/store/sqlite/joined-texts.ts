/**
 * Records' JSON texts posted to another thread as one string and the length of each: posting
 * thousands of strings one by one costs the posting thread more than joining them. Joined by
 * commas, `[${joined}]` is the records' JSON array.
 */
export interface JoinedTexts {
  joined: string;
  lengths: Int32Array;
}

export function joinTexts(texts: string[]): JoinedTexts {
  return { joined: texts.join(','), lengths: Int32Array.from(texts, (t) => t.length) };
}

/** The texts `joinTexts` joined. */
export function splitTexts({ joined, lengths }: JoinedTexts): string[] {
  const texts: string[] = [];
  let at = 0;
  for (const length of lengths) {
    texts.push(joined.slice(at, at + length));
    at += length + 1;
  }
  return texts;
}
