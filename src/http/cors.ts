/**
 * Cross-origin calls from browser apps, answered as the original answers them: with credentials,
 * for the origins `CORS_ORIGINS` allows (by default the original's rule), any method, the request
 * headers a preflight asks for, and preflights cached for ten minutes. A preflight from an origin
 * outside the rule gets 400 with a detail, as in the original; any other request from it is
 * answered without CORS headers, so the browser keeps the answer from the calling page.
 */
import cors from 'cors';
import type { RequestHandler } from 'express';
import type { CorsOrigins } from '../config.ts';

export const CORS_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

/** Headers a page may read from our answers besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = ['X-Request-Id', 'Retry-After', 'WWW-Authenticate'];

export function isAllowedOrigin(origins: CorsOrigins, origin: string): boolean {
  return origins.kind === 'list' ? origins.origins.includes(origin) : origins.pattern.test(origin);
}

export function corsMiddleware(origins: CorsOrigins): RequestHandler {
  const answer = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && isAllowedOrigin(origins, origin)),
    credentials: true,
    methods: CORS_METHODS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  });
  return (req, res, next) => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    if (preflight && origin !== undefined && !isAllowedOrigin(origins, origin)) {
      res.vary('Origin').status(400).json({ detail: 'Disallowed CORS origin' });
      return;
    }
    answer(req, res, next);
  };
}
