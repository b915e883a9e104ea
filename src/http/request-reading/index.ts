/**
 * The one place a request's query string is read as the original service reads it, before the
 * OpenAPI validator checks it: the request URL is rewritten to the parameters the operation takes,
 * so the validator, `req.query` and every handler see the same thing. Requests for paths the
 * document does not describe (login pages, the docs) pass untouched.
 */
import type { Request, RequestHandler } from 'express';
import type { OpenApiDocument } from '../openapi-documents.ts';
import { OperationIndex } from './operations.ts';
import { readQueryString } from './query-string.ts';

export { OperationIndex, type QueryParameter } from './operations.ts';
export { readQueryString } from './query-string.ts';

/** Ignored names are logged (never their values), at most this many per request. */
const LOGGED_NAMES = 20;

/** A request's URL with its query string read as the original reads it, and the names it ignored. */
export interface ReadUrl {
  url: string;
  ignored: string[];
}

/**
 * Reads URLs for the operations of `document`: the URL of a `method` request as its operation
 * takes it (unchanged when it has no query or no documented operation).
 */
export function queryReader(
  document: OpenApiDocument,
): (method: string, path: string, url: string) => ReadUrl {
  const operations = new OperationIndex(document);
  return (method, path, url) => {
    const mark = url.indexOf('?');
    if (mark < 0) return { url, ignored: [] };
    const parameters = operations.queryParametersOf(method, path);
    if (!parameters) return { url, ignored: [] };
    const { query, ignored } = readQueryString(url.slice(mark + 1), parameters);
    return { url: url.slice(0, mark) + (query ? `?${query}` : ''), ignored };
  };
}

/** Logs the names of query parameters a request's operation does not take (never their values). */
export function logIgnoredParameters(req: Request, ignored: string[]): void {
  if (ignored.length === 0) return;
  req.log?.debug(
    { ignored_query_parameters: ignored.slice(0, LOGGED_NAMES).map((name) => name.slice(0, 100)) },
    'query parameters the operation does not take were ignored',
  );
}

/** Rewrites each request's URL as `read` (a queryReader of the validator's document) reads it. */
export function readRequestsAsOriginal(read: ReturnType<typeof queryReader>): RequestHandler {
  return (req, _res, next) => {
    if (!req.url.includes('?')) return next();
    const { url, ignored } = read(req.method, req.path, req.url);
    logIgnoredParameters(req, ignored);
    req.url = url;
    next();
  };
}
