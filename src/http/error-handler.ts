/**
 * The one place errors become responses: every domain error (src/errors.ts) gets the status of
 * its kind and the body `{"detail": ...}` (with any members it carries); the framework's own
 * errors (body parsing, request and response validation) and lost connections are mapped here too.
 */
import { parse as parseContentType } from 'content-type';
import type { ErrorRequestHandler, Request, Response } from 'express';
import {
  DomainError,
  LoginRateLimited,
  MethodNotAllowed,
  ServerBusy,
  StoreUnavailable,
  type ErrorKind,
} from '../errors.ts';

/**
 * The status of each kind of refusal. As the original answers: input that can never be valid is
 * a 400, well-formed input the service will not act on (a query it will not run) a 422.
 */
const STATUS_OF_KIND: Record<ErrorKind, number> = {
  'invalid-input': 400,
  unauthenticated: 401,
  forbidden: 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'not-acceptable': 406,
  conflict: 409,
  'too-large': 413,
  unprocessable: 422,
  'rate-limited': 429,
  failed: 500,
  'not-implemented': 501,
  unavailable: 503,
};

/** The HTTP status a domain error answers with. */
export function statusOf(err: DomainError): number {
  return STATUS_OF_KIND[err.kind];
}

/** Headers a refusal carries: how to authenticate, when to try again. */
function setHeadersOf(err: DomainError, res: Response): void {
  if (err.kind === 'unauthenticated') res.set('WWW-Authenticate', 'Bearer');
  if (err instanceof LoginRateLimited || err instanceof StoreUnavailable || err instanceof ServerBusy)
    res.set('Retry-After', String(err.retryAfterSeconds));
  if (err instanceof MethodNotAllowed) res.set('Allow', err.allow);
}

interface ValidatorError {
  status?: number;
  message?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
}

/**
 * A body that matches none of an `anyOf`'s shapes (`/queries:run`'s commands) gets one error per
 * shape: those saying a shape's own key is missing (`body.find must have required property
 * 'find'`) only tell which shape it is not. When the body broke a rule of some shape beyond that,
 * those rules are what it is told.
 */
function withoutOtherShapes(
  errors: NonNullable<ValidatorError['errors']>,
): NonNullable<ValidatorError['errors']> {
  const anyOf = errors.filter((e) => e.errorCode?.startsWith('anyOf')).map((e) => e.path ?? '');
  if (anyOf.length === 0) return errors;
  const shapeKey = (e: { path?: string; errorCode?: string }) =>
    e.errorCode?.startsWith('required') &&
    anyOf.some(
      (p) => (e.path ?? '').startsWith(`${p}/`) && !(e.path ?? '').slice(p.length + 1).includes('/'),
    );
  const rules = errors.filter((e) => !e.errorCode?.startsWith('anyOf') && !shapeKey(e));
  return rules.length > 0 ? rules : errors;
}

/**
 * A `/queries:run` body that is none of the commands (its only errors say which command keys it
 * lacks): named as an unknown command, with the commands listed.
 */
function unknownCommand(errors: NonNullable<ValidatorError['errors']>, req: Request): string | undefined {
  if (req.path !== '/queries:run') return undefined;
  const anyOf = errors.filter((e) => e.errorCode?.startsWith('anyOf'));
  if (anyOf.length !== 1 || anyOf[0]!.path !== '/body') return undefined;
  const keys = errors
    .filter((e) => e !== anyOf[0])
    .map((e) => /^must have required property '([^']+)'$/.exec(e.message ?? '')?.[1]);
  if (keys.length === 0 || keys.some((key) => key === undefined)) return undefined;
  return `Unknown command: the body must name one of the commands ${[...new Set(keys)].join(', ')} (e.g. {"find": "biosample_set", "filter": {}})`;
}

/** Request-validation messages name the parameter and the rule it broke, e.g. `query.per_page must be >= 1`. */
function validationDetail(err: ValidatorError, req: Request): string {
  if (err.errors?.length) {
    const lines = withoutOtherShapes(err.errors).map((e) =>
      `${(e.path ?? '').replace(/^\//, '').replace(/\//g, '.')} ${e.message ?? ''}`.trim(),
    );
    // A value of no shape at all (not even an object) breaks the same rule once per shape.
    return unknownCommand(err.errors, req) ?? [...new Set(lines)].join('; ');
  }
  return err.message ?? 'Invalid request';
}

/** The longest media type a 415's detail repeats. */
const MEDIA_TYPE_SHOWN = 100;

/** The sender's Content-Type as a 415 names it: its media type, not the whole header. */
function sentMediaType(header: string | undefined): string {
  const type = header === undefined ? '' : parseContentType(header).type;
  if (type === '') return 'A body without a Content-Type header';
  return `Content-Type ${type.length > MEDIA_TYPE_SHOWN ? `${type.slice(0, MEDIA_TYPE_SHOWN)}...` : type}`;
}

/** A 415 names the media types the operation takes. */
function mediaTypeDetail(req: Request): string {
  const content = (req as Request & { openapi?: { schema?: { requestBody?: { content?: object } } } }).openapi
    ?.schema?.requestBody?.content;
  const expected = content ? Object.keys(content) : [];
  const what = sentMediaType(req.headers['content-type']);
  const send = expected.length ? `; send ${expected.join(' or ')}` : '';
  return `${what} is not accepted by ${req.method} ${req.path}${send}`;
}

const CONNECTION_ERROR_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoTopologyClosedError',
  'MongoNotConnectedError',
  'ConnectionError',
  'NoLivingConnectionsError',
  'SearchIndexUnavailable',
]);
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** When a caller may try again after a lost connection (a reconnect or an election takes seconds). */
const UNREACHABLE_RETRY_AFTER_SECONDS = 5;

/** A lost database or search-index connection: the caller may retry, so 503 rather than 500. */
function isConnectionError(err: unknown): boolean {
  for (
    let e = err as { name?: string; code?: string; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    depth++
  ) {
    if ((e.name && CONNECTION_ERROR_NAMES.has(e.name)) || (e.code && CONNECTION_ERROR_CODES.has(e.code)))
      return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Always `{"detail": ...}` with the right status. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (err instanceof DomainError) {
    const status = statusOf(err);
    // The code, never the detail: a detail may quote what the caller sent.
    if (err instanceof StoreUnavailable) {
      // An election, a step-down, a conflict that outlasted the retries, a time limit: try again.
      req.log?.warn({ err }, 'store unavailable');
    } else req.log?.debug({ code: err.code, status }, 'request refused');
    setHeadersOf(err, res);
    res.status(status).json({ detail: err.detail, ...err.members });
    return;
  }
  const status: number | undefined = err?.status ?? err?.statusCode;
  if (err?.type === 'entity.too.large') {
    res.status(413).json({ detail: `Request body is larger than the limit of ${err.limit} bytes` });
    return;
  }
  if (err?.type === 'entity.parse.failed') {
    res.status(422).json({ detail: `Request body is not valid JSON: ${err.message}` });
    return;
  }
  if (status === 415) {
    res.status(415).json({ detail: mediaTypeDetail(req) });
    return;
  }
  if (status && status >= 400 && status < 500) {
    // Request validation: the original answers 422 for malformed parameters and bodies.
    const code = status === 400 ? 422 : status;
    res.status(code).json({ detail: validationDetail(err, req) });
    return;
  }
  if (isConnectionError(err)) {
    req.log?.error({ err }, 'backing service unreachable');
    res
      .set('Retry-After', String(UNREACHABLE_RETRY_AFTER_SECONDS))
      .status(503)
      .json({ detail: 'A backing service (database or search index) is unreachable; try again shortly' });
    return;
  }
  req.log?.error({ err }, 'unhandled error');
  if (status === 500 && Array.isArray(err?.errors) && err.errors.length) {
    // Response validation: our handler produced something outside the contract.
    res.status(500).json({ detail: `Response does not match the contract: ${validationDetail(err, req)}` });
    return;
  }
  if (status === 503) {
    res.status(503).json({ detail: err.message || 'Service unavailable' });
    return;
  }
  res.status(500).json({ detail: 'Internal server error' });
};
