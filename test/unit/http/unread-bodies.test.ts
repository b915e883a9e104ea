/**
 * An answer given before its request's body has all arrived, on a connection the client asked to
 * close, reaches the client whole (src/http/unread-bodies.ts): Node closed the socket with the
 * rest of the body unread, which resets the connection, and a client that had not yet read the
 * answer lost it (no status at all). The client here reads nothing until it has sent its body.
 */
import net from 'node:net';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import { createServer } from '../../../src/app.ts';
import { waitForUnreadBodies } from '../../../src/http/unread-bodies.ts';
import { createTestApp, type TestApp } from '../../support/server.ts';

interface Exchange {
  /** The status line of the answer, or the socket error that ended the exchange. */
  outcome: string;
  body: string;
  ms: number;
}

/**
 * Sends `GET path` with `Connection: close` and a body of `size` bytes, of which only `sent` are
 * sent (all by default), 64 KiB at a time, reading nothing until they are; then reads the answer
 * to the end.
 */
function exchange(port: number, path: string, size: number, sent = size): Promise<Exchange> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    const finish = (outcome: (text: string) => string) => {
      const text = Buffer.concat(got).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      resolve({
        outcome: outcome(text),
        body: split < 0 ? '' : text.slice(split + 4),
        ms: performance.now() - started,
      });
    };
    socket.pause();
    socket.on('data', (chunk: Buffer) => got.push(chunk));
    socket.on('end', () => finish((text) => text.split('\r\n')[0]!));
    socket.on('error', (err: NodeJS.ErrnoException) => finish(() => `error ${err.code}`));
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let written = 0;
    const more = () => {
      if (written >= sent) {
        // Read once the server has had a moment to answer and close.
        setTimeout(() => socket.resume(), 50);
        return;
      }
      const n = Math.min(chunk.length, sent - written);
      written += n;
      if (socket.write(chunk.subarray(0, n))) setTimeout(more, 2);
      else socket.once('drain', () => setTimeout(more, 2));
    };
    setTimeout(more, 20);
  });
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
  );
}

describe('answers before the body has arrived', () => {
  let t: TestApp;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp();
    server = createServer(t.app);
    port = await listen(server);
  }, 60_000);
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
  });

  it('reach a client that closes the connection, whole, from routes that read no body', async () => {
    for (const size of [300_000, 3_000_000]) {
      const metrics = await exchange(port, '/metrics', size);
      expect(metrics.outcome, `GET /metrics with a body of ${size} bytes`).toBe('HTTP/1.1 200 OK');
      expect(metrics.body).toMatch(/^# HELP /);
      expect(metrics.body).toContain('nmdc_http_requests_total');
    }
  });
});

describe('waitForUnreadBodies', () => {
  it('ends the answer once its wait has passed when the rest of the body never comes', async () => {
    const app = express();
    waitForUnreadBodies(app.response, 300);
    app.get('/early', (_req, res) => {
      res.json({ answered: 'before reading the body' });
    });
    const server = createServer(app);
    const port = await listen(server);
    try {
      // 10 KB of the 1 MB announced, then nothing: the answer comes after the wait, not never.
      const stalled = await exchange(port, '/early', 1_000_000, 10_000);
      expect(stalled.outcome).toBe('HTTP/1.1 200 OK');
      expect(JSON.parse(stalled.body)).toEqual({ answered: 'before reading the body' });
      expect(stalled.ms).toBeGreaterThanOrEqual(300);
      expect(stalled.ms).toBeLessThan(5000);
      // A whole body: answered as soon as it has arrived.
      const whole = await exchange(port, '/early', 500_000);
      expect(JSON.parse(whole.body)).toEqual({ answered: 'before reading the body' });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
