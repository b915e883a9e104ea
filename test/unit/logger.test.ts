/**
 * Logs: JSON lines for collectors, readable lines for a person at a terminal (LOG_FORMAT).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, readableLogs, readableMessage } from '../../src/logger.ts';
import { loadConfig, ConfigError } from '../../src/config.ts';
import { startLoggingServer, type LoggingServer } from '../reliability/process-faults.ts';

/** A stream keeping what is written; a terminal when `tty`. */
function output(tty: boolean) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { isTTY?: boolean };
  if (tty) stream.isTTY = true;
  return { stream, text: () => chunks.join('') };
}

const REQUEST_LOG = {
  req: { id: 'r1', method: 'GET', url: '/biosamples' },
  res: { statusCode: 200 },
  responseTime: 12.4,
};

describe('LOG_FORMAT', () => {
  it('defaults to auto and refuses anything but auto, json or pretty', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(ConfigError);
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(
      'LOG_FORMAT must be one of auto, json, pretty, got "yaml"',
    );
  });

  it('auto is readable on a terminal and JSON otherwise; json and pretty are what they say', () => {
    expect(readableLogs('auto', { isTTY: true } as never)).toBe(true);
    expect(readableLogs('auto', {} as never)).toBe(false);
    expect(readableLogs('json', { isTTY: true } as never)).toBe(false);
    expect(readableLogs('pretty', {} as never)).toBe(true);
  });
});

describe('createLogger', () => {
  it('writes readable lines on a terminal: time, level, and a request as method, path, status and time', () => {
    const out = output(true);
    const logger = createLogger({ level: 'info', format: 'auto' }, out.stream);
    logger.info(REQUEST_LOG, 'request completed');
    logger.warn({ collections: ['biosample_set'] }, 'a bulk load did not finish');
    const text = out.text().replace(/\u001b\[[0-9;]*m/g, '');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/biosamples 200 12 ms\n/);
    expect(text).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] WARN: a bulk load did not finish\n {4}collections: \[\n/);
    expect(text).not.toContain('"level"');
  });

  it('writes JSON lines elsewhere, and when LOG_FORMAT=json on a terminal', () => {
    for (const [tty, format] of [
      [false, 'auto'],
      [true, 'json'],
    ] as const) {
      const out = output(tty);
      createLogger({ level: 'info', format }, out.stream).info(REQUEST_LOG, 'request completed');
      const line = JSON.parse(out.text().trim());
      expect(line).toMatchObject({ level: 30, msg: 'request completed', res: { statusCode: 200 } });
    }
  });

  it('keeps the message of other lines about a request', () => {
    expect(
      readableMessage({
        msg: 'unhandled error',
        req: { method: 'POST', url: '/x' },
        res: { statusCode: 500 },
      }),
    ).toBe('POST /x 500: unhandled error');
    expect(readableMessage({ msg: 'query plan', req: { method: 'GET', url: '/studies' } })).toBe(
      'GET /studies: query plan',
    );
    expect(readableMessage({ msg: 'listening' })).toBe('listening');
  });
});

describe('the server', () => {
  let server: LoggingServer;
  beforeAll(async () => {
    server = await startLoggingServer({ LOG_FORMAT: 'pretty' });
  });
  afterAll(async () => {
    server?.kill('SIGKILL');
    await server?.exited;
  });

  it('logs readable lines with LOG_FORMAT=pretty', async () => {
    await fetch(`${server.url}/version`);
    await server.waitForLog('INFO: GET /version 200', 10_000);
    expect(server.logs()).toMatch(/INFO: listening; docs at http:\/\/127\.0\.0\.1:\d+\/docs/);
    expect(server.logs()).not.toContain('"msg"');
  });
});
