/**
 * What a reader of a large JSON document tells while it reads it (the request body reader,
 * src/http/request-reading/json-in-turns.ts), for work on its values to begin before it is all
 * in (a submission's records, src/submission/early-staging.ts).
 */

/**
 * Told of a document's arrays' elements as they are parsed. What it is told is the document's
 * value only once `end` comes; after `abandon` nothing more comes.
 */
export interface JsonObserver {
  /**
   * Elements just parsed, in document order, of the document's `array`th array (counted from 0)
   * that is the value of the top-level object's member `key` (undefined: of the top-level array).
   * A key the object holds twice is told with each of its arrays.
   */
  elements(key: string | undefined, values: unknown[], array: number): void;
  /** Every byte of the document has come (its last parts may still be parsed). */
  received(): void;
  /** The document is all parsed, as told. */
  end(): void;
  /** The document is refused, or its reading given up. */
  abandon(): void;
}
