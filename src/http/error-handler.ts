import type { ErrorRequestHandler, Request } from 'express';
import { InvalidQuery, InvalidRecord, StoreInputError, UnsupportedQuery } from '../store/errors.ts';
import { HttpError } from '../errors.ts';

/**
 * The status each refusal of the store and query layers answers with: input that can never be
 * valid is a 400, a well-formed query the service will not run a 422, as the original answers.
 */
export function statusOfStoreError(err: StoreInputError): number {
  if (err instanceof InvalidQuery || err instanceof InvalidRecord) return 400;
  if (err instanceof UnsupportedQuery) return 422;
  return 400;
}

interface ValidatorError {
  status?: number;
  message?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
}

const fieldOf = (path: string | undefined) => (path ?? '').replace(/^\//, '').replace(/\//g, '.');

/**
 * Request-validation messages name the parameter and the rule it broke, e.g. `query.per_page must be >= 1`.
 * A value that matches none of several shapes, each told apart by one property (the commands of
 * `POST /queries:run`), is named by those properties instead of one message per shape.
 */
function validationDetail(err: ValidatorError, req: Request): string {
  if (!err.errors?.length) return err.message ?? 'Invalid request';
  const anyOf = err.errors.find((e) => e.message === 'must match a schema in anyOf');
  const others = err.errors.filter((e) => e !== anyOf);
  if (anyOf) {
    const at = fieldOf(anyOf.path);
    const required = others.map((e) => /^must have required property '([^']+)'$/.exec(e.message ?? '')?.[1]);
    if (required.length > 0 && required.every((name) => name !== undefined)) {
      const names = [...new Set(required)].join(', ');
      if (at === 'body' && req.path === '/queries:run')
        return `Unknown command: the body must name one of the commands ${names} (e.g. {"find": "biosample_set", "filter": {}})`;
      return `${at} must have one of the properties ${names}`;
    }
  }
  const messages = (others.length ? others : err.errors).map((e) =>
    `${fieldOf(e.path)} ${e.message ?? ''}`.trim(),
  );
  return [...new Set(messages)].join('; ');
}

/** A 415 names the media types the operation takes. */
function mediaTypeDetail(req: Request): string {
  const content = (req as Request & { openapi?: { schema?: { requestBody?: { content?: object } } } }).openapi
    ?.schema?.requestBody?.content;
  const expected = content ? Object.keys(content) : [];
  const sent = req.headers['content-type']?.split(';')[0]?.trim();
  const what = sent ? `Content-Type ${sent}` : 'A body without a Content-Type header';
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
]);
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

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

/** The one place errors become responses: always `{"detail": ...}` with the right status. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (err instanceof HttpError) {
    res
      .set(err.headers)
      .status(err.status)
      .json({ detail: err.detail, ...err.members });
    return;
  }
  if (err instanceof StoreInputError) {
    res.status(statusOfStoreError(err)).json({ detail: err.detail });
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
