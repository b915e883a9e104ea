/**
 * Helmet's security headers, worked out once: helmet builds the same headers for every response
 * (our policies hold no per-request values), yet its middleware chain re-derives them, the
 * Content-Security-Policy text included, on each request. Here it runs once against a recording
 * response, and each request gets the recorded headers.
 */
import type { RequestHandler } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

export function securityHeaders(options: HelmetOptions): RequestHandler {
  const set: Array<[string, string]> = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      set.push([name, String(value)]);
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  let done = false;
  helmet(options)({} as never, recorder as never, (err?: unknown) => {
    if (err) throw err;
    done = true;
  });
  // Helmet's middleware is synchronous; were it ever not, the recording would be incomplete.
  if (!done) throw new Error('helmet did not finish synchronously: its headers cannot be fixed once');
  return (_req, res, next) => {
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}
