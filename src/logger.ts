/**
 * The service's logger: JSON lines (one per request, for log collectors), or readable lines
 * (pino-pretty: time, level, message, and a request as `GET /biosamples 200 12 ms`) for a person at
 * a terminal. `LOG_FORMAT` chooses; `auto`, the default, is readable when the output is a terminal.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat } from './config.ts';

type Output = NodeJS.WritableStream & { isTTY?: boolean; fd?: number };

/** Whether lines for `output` are readable ones rather than JSON. */
export function readableLogs(format: LogFormat, output: Output): boolean {
  return format === 'pretty' || (format === 'auto' && output.isTTY === true);
}

interface LogLine {
  msg?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

/** A request's line as a person reads it; other lines keep their message. */
export function readableMessage(log: LogLine, messageKey = 'msg'): string {
  const message = String((log as Record<string, unknown>)[messageKey] ?? '');
  if (!log.req) return message;
  const request = `${log.req.method ?? ''} ${log.req.url ?? ''}`.trim();
  if (log.res?.statusCode === undefined) return `${request}: ${message}`;
  const time = log.responseTime === undefined ? '' : ` ${Math.round(log.responseTime)} ms`;
  return message === 'request completed'
    ? `${request} ${log.res.statusCode}${time}`
    : `${request} ${log.res.statusCode}${time}: ${message}`;
}

/**
 * The logger writing to `output` (stdout by default) at `level`, in the chosen format. `grouped`
 * JSON lines are written in groups of about 2 KiB (at least every half second, and all of them on
 * exit; `logger.flush()` writes them now) rather than one write per line: a write per request was a
 * tenth of a small request's CPU. A group stays below the 4 KiB a pipe writes whole, so the lines of
 * several server processes never interleave.
 */
export function createLogger(
  options: { level: string; format: LogFormat; grouped?: boolean },
  output: Output = process.stdout,
): Logger {
  if (!readableLogs(options.format, output)) {
    const fd = output === process.stdout ? 1 : output === process.stderr ? 2 : undefined;
    if (fd === undefined) return pino({ level: options.level }, output);
    if (!options.grouped) return pino({ level: options.level }, pino.destination(fd));
    const destination = pino.destination({ dest: fd, sync: true, minLength: 2048, periodicFlush: 500 });
    process.on('exit', () => destination.flushSync());
    return pino({ level: options.level }, destination);
  }
  return pino(
    { level: options.level },
    pretty({
      destination: output,
      sync: true,
      colorize: output.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,req,res,responseTime',
      messageFormat: (log, messageKey) => readableMessage(log as LogLine, messageKey),
    }),
  );
}
