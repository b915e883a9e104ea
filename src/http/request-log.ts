/**
 * One log line per request, with the request's id: the lines pino-http writes with the service's
 * options (`req` as id, method and path, `res` as the status, `responseTime`, and the message
 * `request completed`, `request aborted` or `request errored` with the error), and `req.log`, the
 * logger bound to the request, for handlers. pino-http builds a child logger through its
 * serializers (each one first makes the full request or response object, headers and all, that
 * ours then reduce to three fields) and three listeners per request: here the three fields are
 * taken directly. The request's line is written by the service's logger with the request's fields
 * first, which pino writes as a child bound to them would; the child behind `req.log` is made only
 * when a handler writes a line at an enabled level (most requests never do, and a child costs
 * about as much as the line). The lines are the same (test/unit/http/request-log.test.ts holds them
 * to pino-http's, byte for byte).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Level, Logger } from 'pino';

/** The levels a request's logger writes at. */
type LogMethod = (obj: unknown, msg?: string, ...args: unknown[]) => void;
export type RequestLogger = Record<Level, LogMethod>;

/** The request's fields on each of its lines. */
interface RequestFields {
  id: string;
  method: string | undefined;
  url: string;
}

/** `req.log`: the service's logger bound to the request's fields, made on its first line. */
class LazyRequestLogger implements RequestLogger {
  private bound: Logger | undefined;

  constructor(
    private readonly root: Logger,
    private readonly fields: RequestFields,
  ) {}

  private write(level: Level, args: unknown[]): void {
    if (!this.root.isLevelEnabled(level)) return;
    this.bound ??= this.root.child({ req: this.fields });
    (this.bound[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
}

declare module 'http' {
  interface IncomingMessage {
    /** The request's id (X-Request-Id), set by the request log. */
    id: string;
    /** The logger bound to the request: its lines carry the request's id, method and path. */
    log: RequestLogger;
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
    const res = response as ServerResponse;
    const started = Date.now();
    req.id ||= options.genReqId(req, res);
    // Never the query: it may hold what the caller would not want logged.
    const fields: RequestFields = { id: req.id, method: req.method, url: String(req.url).split('?')[0]! };
    const log = new LazyRequestLogger(logger, fields);
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
      if (error) logger.info({ req: fields, res: status, err: error, responseTime }, 'request errored');
      else
        logger.info(
          { req: fields, res: status, responseTime },
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
