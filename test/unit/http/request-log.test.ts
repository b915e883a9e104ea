/**
 * The request log (src/http/request-log.ts) writes the lines pino-http wrote with the service's
 * options: the same app behind each, asked the same requests (answered, refused, failed, thrown,
 * aborted, ignored), must log the same lines, and handlers' own lines through `req.log` the same.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLog } from '../../../src/http/request-log.ts';

interface Side {
  server: http.Server;
  port: number;
  lines: string[];
}

const genReqId = (req: http.IncomingMessage, res: http.ServerResponse) => {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && /^[\w.-]{1,64}$/.test(incoming) ? incoming : 'generated';
  res.setHeader('X-Request-Id', id);
  return id;
};

/** A logger at `level` whose lines are kept in `lines`. */
function keptLines(level: string): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk, _encoding, callback) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        callback();
      },
    }),
  );
  return { logger, lines };
}

async function side(kind: 'ours' | 'pino-http'): Promise<Side> {
  const { logger, lines } = keptLines('debug');
  const app = express();
  app.use(
    kind === 'ours'
      ? requestLog(logger, { genReqId, ignore: (req) => req.url === '/metrics' })
      : pinoHttp({
          logger,
          genReqId,
          autoLogging: { ignore: (req) => req.url === '/metrics' },
          serializers: {
            req: (req) => ({ id: req.id, method: req.method, url: String(req.url).split('?')[0] }),
            res: (res) => ({ statusCode: res.statusCode }),
          },
        }),
  );
  app.get('/ok', (req, res) => {
    req.log.debug({ detail: 'x' }, 'a handler line');
    res.json({ ok: true });
  });
  app.get('/metrics', (_req, res) => void res.send('metrics'));
  app.get('/refused', (_req, res) => void res.status(404).json({ detail: 'no' }));
  app.get('/failed', (_req, res) => void res.status(503).json({ detail: 'down' }));
  app.get('/thrown', (req, res) => {
    const err = new Error('boom');
    req.log.warn({ err }, 'a handler error');
    res.err = err;
    res.status(500).json({ detail: 'boom' });
  });
  app.get('/hang', (_req, res) => {
    res.write('part');
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, lines };
}

function get(
  s: Side,
  path: string,
  headers: Record<string, string> = {},
  abortAfterMs?: number,
): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: s.port, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', () => resolve());
    });
    req.on('error', () => resolve());
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
  });
}

/** Lines without what differs between two runs (time, pid, host, duration, stacks). */
function normalised(lines: string[]): unknown[] {
  return lines.map((line) => {
    const {
      time: _t,
      pid: _p,
      hostname: _h,
      responseTime,
      err,
      ...rest
    } = JSON.parse(line) as Record<string, any>;
    return {
      ...rest,
      responseTime: typeof responseTime,
      ...(err ? { err: { ...err, stack: typeof err.stack } } : {}),
    };
  });
}

/** Lines as written, keys in their order, with what differs between two runs blanked. */
function blanked(lines: string[]): string[] {
  return lines.map((line) =>
    line
      .replace(/"time":\d+/, '"time":0')
      .replace(/"pid":\d+/, '"pid":0')
      .replace(/"responseTime":\d+/, '"responseTime":0')
      .replace(/"stack":"(?:[^"\\]|\\.)*"/g, '"stack":""'),
  );
}

let ours: Side;
let theirs: Side;
beforeAll(async () => {
  ours = await side('ours');
  theirs = await side('pino-http');
});
afterAll(async () => {
  for (const s of [ours, theirs]) {
    s.server.closeAllConnections();
    await new Promise<void>((resolve) => s.server.close(() => resolve()));
  }
});

describe('the request log', () => {
  it('writes the lines pino-http wrote, request by request', async () => {
    const requests: Array<[string, Record<string, string>?, number?]> = [
      ['/ok?secret=1'],
      ['/ok', { 'X-Request-Id': 'chosen-1' }],
      ['/ok', { 'X-Request-Id': 'bad id' }],
      ['/metrics'],
      ['/refused'],
      ['/failed'],
      ['/thrown'],
      ['/nowhere'],
      ['/hang', {}, 100],
    ];
    for (const [path, headers, abort] of requests) {
      for (const s of [ours, theirs]) {
        const before = s.lines.length;
        await get(s, path, headers, abort);
        // The line of an aborted request is written when the server sees the connection close.
        for (let i = 0; i < 50 && s.lines.length === before; i++) await new Promise((r) => setTimeout(r, 10));
      }
    }
    const lines = normalised(ours.lines);
    expect(lines).toEqual(normalised(theirs.lines));
    // Byte for byte: the request's fields where a child bound to them puts them, before the line's own.
    expect(blanked(ours.lines)).toEqual(blanked(theirs.lines));
    expect(ours.lines.length).toBe(theirs.lines.length);
    // What they hold: the path without its query, the id chosen or generated, the status, no line for /metrics.
    expect(lines).toContainEqual({
      level: 30,
      req: { id: 'chosen-1', method: 'GET', url: '/ok' },
      res: { statusCode: 200 },
      responseTime: 'number',
      msg: 'request completed',
    });
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'request errored', res: { statusCode: 500 } }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request aborted' }));
    expect(JSON.stringify(lines)).not.toContain('secret');
    expect(JSON.stringify(lines)).not.toContain('/metrics');
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'a handler line',
        detail: 'x',
        req: { id: 'generated', method: 'GET', url: '/ok' },
      }),
    );
  });

  it("binds a logger to the request only for a handler's line at an enabled level", async () => {
    const { logger, lines } = keptLines('info');
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => {
      children++;
      return child(...args);
    }) as typeof logger.child;
    const app = express();
    app.use(requestLog(logger, { genReqId }));
    app.get('/quiet', (req, res) => {
      req.log.debug('below the level');
      res.json({ ok: true });
    });
    app.get('/loud', (req, res) => {
      req.log.warn({ detail: 'y' }, 'a warning');
      req.log.info('and a note');
      res.json({ ok: true });
    });
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const s: Side = { server, port: (server.address() as AddressInfo).port, lines };
    try {
      await get(s, '/quiet', { 'X-Request-Id': 'q-1' });
      expect(children).toBe(0);
      await get(s, '/loud', { 'X-Request-Id': 'l-1' });
      expect(children).toBe(1);
      for (let i = 0; i < 50 && lines.length < 4; i++) await new Promise((r) => setTimeout(r, 10));
      expect(normalised(lines)).toEqual([
        {
          level: 30,
          req: { id: 'q-1', method: 'GET', url: '/quiet' },
          res: { statusCode: 200 },
          responseTime: 'number',
          msg: 'request completed',
        },
        {
          level: 40,
          req: { id: 'l-1', method: 'GET', url: '/loud' },
          detail: 'y',
          responseTime: 'undefined',
          msg: 'a warning',
        },
        {
          level: 30,
          req: { id: 'l-1', method: 'GET', url: '/loud' },
          responseTime: 'undefined',
          msg: 'and a note',
        },
        {
          level: 30,
          req: { id: 'l-1', method: 'GET', url: '/loud' },
          res: { statusCode: 200 },
          responseTime: 'number',
          msg: 'request completed',
        },
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
