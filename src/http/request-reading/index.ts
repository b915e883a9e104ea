/**
 * The one place a request's query string is read as the original service reads it, before the
 * OpenAPI validator checks it: the request URL is rewritten to the parameters the operation takes,
 * so the validator, `req.query` and every handler see the same thing. Requests for paths the
 * document does not describe (login pages, the docs) pass untouched.
 */
import type { RequestHandler } from 'express';
import type { OpenApiDocument } from '../openapi-documents.ts';
import { OperationIndex } from './operations.ts';
import { readQueryString } from './query-string.ts';

export { OperationIndex, type QueryParameter } from './operations.ts';
export { readQueryString } from './query-string.ts';

/** Ignored names are logged (never their values), at most this many per request. */
const LOGGED_NAMES = 20;

export function readRequestsAsOriginal(document: OpenApiDocument): RequestHandler {
  const operations = new OperationIndex(document);
  return (req, _res, next) => {
    const mark = req.url.indexOf('?');
    if (mark < 0) return next();
    const parameters = operations.queryParametersOf(req.method, req.path);
    if (!parameters) return next();
    const { query, ignored } = readQueryString(req.url.slice(mark + 1), parameters);
    if (ignored.length > 0) {
      req.log?.debug(
        { ignored_query_parameters: ignored.slice(0, LOGGED_NAMES).map((name) => name.slice(0, 100)) },
        'query parameters the operation does not take were ignored',
      );
    }
    req.url = req.url.slice(0, mark) + (query ? `?${query}` : '');
    next();
  };
}
