/**
 * A counter raised in the transaction of every removal of indexed strings. A key of a string read
 * in one transaction is still that string's key in a later one exactly when the counter has not
 * moved in between: strings are never changed in place, and a key is only reused after a removal.
 */
export const STRINGS_GENERATION = {
  read: "SELECT value FROM search_meta WHERE key = 'strings_generation'",
  raise:
    "INSERT INTO search_meta(key, value) VALUES ('strings_generation', 1) " +
    'ON CONFLICT(key) DO UPDATE SET value = value + 1',
} as const;
