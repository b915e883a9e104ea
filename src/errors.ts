/**
 * Every error the service raises on purpose, in one file, grouped by area. Each has a stable
 * machine-readable `code` (tests, logs and tools switch on it, never on the message), a human
 * `detail`, and a `kind` saying what sort of refusal it is. Nothing here speaks HTTP: the status
 * each kind answers with is decided in one place, src/http/error-handler.ts, which renders every
 * one of them as `{"detail": ...}` (with any `members` beside it).
 */

/** What sort of refusal an error is; the error handler maps each kind to one status. */
export type ErrorKind =
  /** Input that can never be valid as written. */
  | 'invalid-input'
  /** No credentials, or credentials that are not (or no longer) valid. */
  | 'unauthenticated'
  /** A known caller who may not do this. */
  | 'forbidden'
  | 'not-found'
  /** The path exists, but not for this method (`allow` names the methods it takes). */
  | 'method-not-allowed'
  /** None of the formats the caller accepts can be produced. */
  | 'not-acceptable'
  /** The request contradicts what is stored (a duplicate id, a job already claimed). */
  | 'conflict'
  | 'too-large'
  /** Well-formed input the service will not act on (a rule it breaks, a query it will not run). */
  | 'unprocessable'
  | 'rate-limited'
  /** The service failed to do what was asked; `detail` says what, for the caller to report. */
  | 'failed'
  | 'not-implemented'
  /** A service it depends on cannot be reached; the caller may try again. */
  | 'unavailable';

/** The base of every error in this file. */
export abstract class DomainError extends Error {
  abstract readonly code: string;
  abstract readonly kind: ErrorKind;

  constructor(
    /** What was wrong, for a person: a message, or a structured account (validation results). */
    readonly detail: unknown,
    /** Members of the answer beside `detail`, for clients that read more than the message. */
    readonly members: Record<string, unknown> = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

/**
 * The one factory of error classes: a class named `name` with a stable `code` and a `kind`;
 * `defaultDetail` is used when a throw site gives none.
 */
function defineError(name: string, code: string, kind: ErrorKind, defaultDetail?: string) {
  const ErrorClass = class extends DomainError {
    readonly code = code;
    readonly kind = kind;

    constructor(detail: unknown = defaultDetail, members?: Record<string, unknown>) {
      super(detail, members);
      this.name = name;
    }
  };
  Object.defineProperty(ErrorClass, 'name', { value: name });
  return ErrorClass;
}

/** An error class whose refusals say when to try again (`retryAfterSeconds`, sent as `Retry-After`). */
function defineRetryLater(name: string, code: string, kind: ErrorKind) {
  const RetryLater = class extends defineError(name, code, kind) {
    readonly retryAfterSeconds: number;

    constructor(detail: string, retryAfterSeconds: number, options?: { cause?: unknown }) {
      super(detail);
      this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
      if (options && 'cause' in options) this.cause = options.cause;
    }
  };
  Object.defineProperty(RetryLater, 'name', { value: name });
  return RetryLater;
}

// General refusals, thrown by any capability.

export const BadRequest = defineError('BadRequest', 'NMDC_ERR_BAD_REQUEST', 'invalid-input');
export type BadRequest = InstanceType<typeof BadRequest>;
export const Unauthorized = defineError(
  'Unauthorized',
  'NMDC_ERR_UNAUTHORIZED',
  'unauthenticated',
  'Access token is invalid or missing. Please log in again.',
);
export type Unauthorized = InstanceType<typeof Unauthorized>;
export const Forbidden = defineError('Forbidden', 'NMDC_ERR_FORBIDDEN', 'forbidden', 'Forbidden');
export type Forbidden = InstanceType<typeof Forbidden>;
export const NotFound = defineError('NotFound', 'NMDC_ERR_NOT_FOUND', 'not-found', 'Not found');
export type NotFound = InstanceType<typeof NotFound>;
export const Conflict = defineError('Conflict', 'NMDC_ERR_CONFLICT', 'conflict');
export type Conflict = InstanceType<typeof Conflict>;
export const Unprocessable = defineError('Unprocessable', 'NMDC_ERR_UNPROCESSABLE', 'unprocessable');
export type Unprocessable = InstanceType<typeof Unprocessable>;
export const NotImplemented = defineError(
  'NotImplemented',
  'NMDC_ERR_NOT_IMPLEMENTED',
  'not-implemented',
  'Not implemented',
);
export type NotImplemented = InstanceType<typeof NotImplemented>;
export const ServiceUnavailable = defineError('ServiceUnavailable', 'NMDC_ERR_UNAVAILABLE', 'unavailable');
export type ServiceUnavailable = InstanceType<typeof ServiceUnavailable>;

const MethodNotAllowedBase = defineError(
  'MethodNotAllowed',
  'NMDC_ERR_METHOD_NOT_ALLOWED',
  'method-not-allowed',
);
/** A method the path does not take; `allow` lists those it takes (`GET, HEAD, OPTIONS`). */
export class MethodNotAllowed extends MethodNotAllowedBase {
  constructor(
    detail: string,
    readonly allow: string,
  ) {
    super(detail);
  }
}
export const NotAcceptable = defineError('NotAcceptable', 'NMDC_ERR_NOT_ACCEPTABLE', 'not-acceptable');
export type NotAcceptable = InstanceType<typeof NotAcceptable>;

// Queries and records: the store, query and search layers.

/** A query that can never be valid as written: compact syntax it cannot read, a negative skip. */
export const InvalidQuery = defineError('InvalidQuery', 'NMDC_ERR_QUERY_INVALID', 'invalid-input');
export type InvalidQuery = InstanceType<typeof InvalidQuery>;
/**
 * A well-formed query this service will not run: an operator, operand shape, field name, nesting
 * depth or regular expression outside what the store accepts, or a filter that is not a JSON object.
 */
export const UnsupportedQuery = defineError(
  'UnsupportedQuery',
  'NMDC_ERR_QUERY_UNSUPPORTED',
  'unprocessable',
);
export type UnsupportedQuery = InstanceType<typeof UnsupportedQuery>;
/** A record that cannot be written: not an object, or without a non-empty string `id`. */
export const InvalidRecord = defineError('InvalidRecord', 'NMDC_ERR_RECORD_INVALID', 'invalid-input');
export type InvalidRecord = InstanceType<typeof InvalidRecord>;

/**
 * The engine behind the store cannot answer now, through no fault of the input: an election or a
 * step-down, a write conflict that outlasted the retries, a time limit, a lost connection. The
 * request may be retried after `retryAfterSeconds`; `detail` says what happened, without the
 * engine's internals.
 */
export const StoreUnavailable = defineRetryLater(
  'StoreUnavailable',
  'NMDC_ERR_STORE_UNAVAILABLE',
  'unavailable',
);
export type StoreUnavailable = InstanceType<typeof StoreUnavailable>;
/**
 * The service is answering as many requests of a costly kind as it may at once, and as many wait
 * as may: the request may be sent again after `retryAfterSeconds`.
 */
export const ServerBusy = defineRetryLater('ServerBusy', 'NMDC_ERR_BUSY', 'unavailable');
export type ServerBusy = InstanceType<typeof ServerBusy>;

// Request bodies read by the service itself (multipart uploads).

/** An uploaded file over MAX_BODY_BYTES. */
export const UploadTooLarge = defineError('UploadTooLarge', 'NMDC_ERR_UPLOAD_TOO_LARGE', 'too-large');
export type UploadTooLarge = InstanceType<typeof UploadTooLarge>;
/** A JSON body (or record) nested deeper than the store accepts. */
export const JsonTooDeep = defineError('JsonTooDeep', 'NMDC_ERR_JSON_TOO_DEEP', 'invalid-input');
export type JsonTooDeep = InstanceType<typeof JsonTooDeep>;
/** A multipart body that cannot be read, or that ended before it was complete. */
export const UploadMalformed = defineError('UploadMalformed', 'NMDC_ERR_UPLOAD_MALFORMED', 'invalid-input');
export type UploadMalformed = InstanceType<typeof UploadMalformed>;

// Authentication: `/token` and the login pages.

/** Too many login attempts for an account or from an address; try again after `retryAfterSeconds`. */
export const LoginRateLimited = defineRetryLater(
  'LoginRateLimited',
  'NMDC_ERR_AUTH_RATE_LIMITED',
  'rate-limited',
);
export type LoginRateLimited = InstanceType<typeof LoginRateLimited>;
/** A `/token` form whose `grant_type` is neither `password` nor `client_credentials`. */
export const UnsupportedGrant = defineError(
  'UnsupportedGrant',
  'NMDC_ERR_AUTH_UNSUPPORTED_GRANT',
  'invalid-input',
);
export type UnsupportedGrant = InstanceType<typeof UnsupportedGrant>;
/** A `/token` request the token provider refused for a reason other than bad credentials. */
export const TokenRequestRefused = defineError(
  'TokenRequestRefused',
  'NMDC_ERR_AUTH_TOKEN_REQUEST_REFUSED',
  'invalid-input',
);
export type TokenRequestRefused = InstanceType<typeof TokenRequestRefused>;

// Workflow management: jobs and their claims.

const ClaimHeldBase = defineError('ClaimHeld', 'NMDC_ERR_JOBS_CLAIM_HELD', 'conflict');
/** A claim while the site holds one: names the operation, whose id clients read from the body. */
export class ClaimHeld extends ClaimHeldBase {
  constructor(
    readonly jobId: string,
    readonly operationId: string,
  ) {
    super(`client site already claimed job ${jobId} -- see operation ${operationId}`, { id: operationId });
  }
}

// Metadata writes: validation, `/queries:run` updates and deletes, submissions.

/** A payload that does not validate; its `validation` member is the validation answer as JSON. */
export const MetadataInvalid = defineError('MetadataInvalid', 'NMDC_ERR_METADATA_INVALID', 'unprocessable');
export type MetadataInvalid = InstanceType<typeof MetadataInvalid>;
/** An update after which records would not validate; `validation_errors` names them. */
export const InvalidAfterUpdate = defineError(
  'InvalidAfterUpdate',
  'NMDC_ERR_WRITE_INVALID_AFTER_UPDATE',
  'unprocessable',
);
export type InvalidAfterUpdate = InstanceType<typeof InvalidAfterUpdate>;
/** A delete or update that would leave references broken; `broken_references` lists them. */
export const BrokenReferences = defineError(
  'BrokenReferences',
  'NMDC_ERR_WRITE_BROKEN_REFERENCES',
  'unprocessable',
);
export type BrokenReferences = InstanceType<typeof BrokenReferences>;

/** Validated records that could not be applied; the run records the failure. */
export const SubmissionFailed = defineError('SubmissionFailed', 'NMDC_ERR_SUBMISSION_FAILED', 'failed');
export type SubmissionFailed = InstanceType<typeof SubmissionFailed>;
