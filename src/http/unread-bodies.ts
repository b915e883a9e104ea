/**
 * Answers to requests whose body has not all arrived, delivered whole. A route may answer before
 * it reads a body (`/metrics` and the docs read none; a refusal may come first). When the client
 * asked to close the connection, Node closes it as soon as the answer is written, and closing a
 * socket with request bytes still unread sends a reset: a client that had not yet read the answer
 * lost it (`ECONNRESET` or `EPIPE` and no status at all; 3 of 16,000 requests of `npm run
 * bench:fuzz`, each a GET /metrics with a body of 186-367 KB). Such an answer is ended only once
 * the rest of the body has arrived, read and dropped, or after UNREAD_BODY_MS (then it is ended as
 * before). Bytes dropped cost no memory; the wait is bounded in time only, as a slow upload is.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long an answer waits for the rest of its request's body, at most (ms). */
export const UNREAD_BODY_MS = 5000;

/** Resolves once the rest of `req`'s body has been read and dropped, or after `waitMs`. */
function bodyDropped(req: IncomingMessage, waitMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    // Flowing with no reader: each chunk is dropped as it arrives.
    req.resume();
  });
}

/**
 * Has the responses made from `response` (an app's response prototype) wait, when they end, for
 * the rest of a request body still arriving on a connection that closes after them (at most
 * `waitMs`).
 */
export function waitForUnreadBodies(response: object, waitMs = UNREAD_BODY_MS): void {
  const end = (Object.getPrototypeOf(response) as ServerResponse).end;
  const waiting = new WeakSet<ServerResponse>();
  Object.defineProperty(response, 'end', {
    configurable: true,
    writable: true,
    value: function endOnceBodyRead(this: ServerResponse, ...args: unknown[]) {
      const req = this.req as IncomingMessage | undefined;
      if (!req || req.complete || req.destroyed || this.shouldKeepAlive || waiting.has(this))
        return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
      waiting.add(this);
      void bodyDropped(req, waitMs).then(() =>
        (end as (...a: unknown[]) => ServerResponse).apply(this, args),
      );
      return this;
    },
  });
}
