/**
 * One log line per request, with the request's id: the lines pino-http writes with the service's
 * options (`req` as id, method and path, `res` as the status, `responseTime`, and the message
 * `request completed`, `request aborted` or `request errored` with the error), and `req.log`, the
 * logger bound to the request, for handlers. pino-http builds a child logger through its
 * serializers (each one first makes the full request or response object, headers and all, that
 * ours then reduce to three fields) and three listeners per request: here the three fields are
 * taken directly. The lines are the same (test/unit/request-log.test.ts holds them to pino-http's).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';

declare module 'http' {
  interface IncomingMessage {
    /** The request's id (X-Request-Id), set by the request log. */
    id: string;
    /** The logger bound to the request: its lines carry the request's id, method and path. */
    log: Logger;
  }
  interface ServerResponse {
    /** An error the answer came from, logged with the request's line. */
    err?: unknown;
  }
}

export interface RequestLogOptions {
  /** The request's id; may set a response header. */
  genReqId: (req: IncomingMessage, res: ServerResponse) => string;
  /** Requests answered without a log line (they still get an id and `req.log`). */
  ignore?: (req: IncomingMessage) => boolean;
}

export function requestLog(logger: Logger, options: RequestLogOptions): RequestHandler {
  return (request, response, next) => {
    const req = request as IncomingMessage;
    const res = response as ServerResponse & { log?: Logger };
    const started = Date.now();
    req.id ||= options.genReqId(req, res);
    // Never the query: it may hold what the caller would not want logged.
    const log = logger.child({ req: { id: req.id, method: req.method, url: String(req.url).split('?')[0] } });
    res.log ??= log;
    req.log ??= log;
    let done = false;
    const finished = (err?: unknown) => {
      if (done) return;
      done = true;
      const responseTime = Date.now() - started;
      // As pino-http's response serializer: no status before the headers went out.
      const status = { statusCode: res.headersSent ? res.statusCode : null };
      const error =
        err ||
        res.err ||
        (res.statusCode >= 500 ? new Error(`failed with status code ${res.statusCode}`) : undefined);
      if (error) log.info({ res: status, err: error, responseTime }, 'request errored');
      else
        log.info(
          { res: status, responseTime },
          !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted',
        );
    };
    if (!options.ignore?.(req)) {
      // Logged once (`done`): plain listeners, cheaper than once-wrappers on each response.
      res.on('close', finished);
      res.on('finish', finished);
    }
    res.once('error', finished);
    next();
  };
}
