/**
 * What the store and query layers throw when the input, not the service, is at fault. They speak
 * of queries and records, never of HTTP: the API's error handler (src/http/error-handler.ts)
 * decides which status each one answers with, and `detail` says what was wrong with the input.
 */

/** Input the store or query layer refuses; `detail` names what was wrong with it. */
export abstract class StoreInputError extends Error {
  readonly detail: string;

  constructor(detail: string) {
    super(detail);
    this.name = new.target.name;
    this.detail = detail;
  }
}

/** A query that can never be valid as written: compact syntax it cannot read, a negative skip. */
export class InvalidQuery extends StoreInputError {}

/**
 * A well-formed query this service will not run: an operator, operand shape, field name, nesting
 * depth or regular expression outside what the store accepts, or a filter that is not a JSON object.
 */
export class UnsupportedQuery extends StoreInputError {}

/** A record that cannot be written: not an object, or without a non-empty string `id`. */
export class InvalidRecord extends StoreInputError {}

/**
 * The engine behind the store cannot answer now, through no fault of the input: an election or a
 * step-down, a write conflict that outlasted the retries, a time limit, a lost connection. The
 * request may be retried after `retryAfterSeconds`; `detail` says what happened, without the
 * engine's internals.
 */
export class StoreUnavailable extends Error {
  readonly detail: string;

  constructor(
    detail: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = 'StoreUnavailable';
    this.detail = detail;
  }
}
