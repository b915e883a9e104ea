/**
 * A JSON answer written the way Express's `res.json` writes it, without its machinery where the
 * answer is a plain one: Express's `res.json` and `res.send` look up three app settings, read the
 * Content-Type back to add a charset (parsing it twice), look the type up in the MIME table, check
 * the request's freshness, and turn a body of 1,000 characters or more into a Buffer, which Node
 * then writes with its headers as two chunks. A plain answer (status 200, no Content-Type or
 * Transfer-Encoding set yet, no conditional request, the app's default JSON settings and no ETags,
 * `res.json` not replaced, e.g. by the response validator) is written here with the same status
 * line, headers in the same order and the same body, as one string; anything else goes to
 * `res.json`, which stays the canonical answer. A value at hand as its JSON text (a record as the
 * store keeps it) is written as it is, unparsed (`answerJsonText`).
 */
import express, { type Response } from 'express';

const expressJson = express.response.json;

/** The Content-Type Express gives a JSON answer (`application/json` with its charset added). */
const JSON_TYPE = 'application/json; charset=utf-8';

/** Whether `res.json` would write exactly what `answerJson` writes for a body Express can send. */
function plain(res: Response): boolean {
  if (res.json !== expressJson || res.statusCode !== 200 || res.headersSent) return false;
  const settings = res.app.settings as Record<string, unknown>;
  if (
    settings['json replacer'] !== undefined ||
    settings['json spaces'] !== undefined ||
    settings['json escape'] ||
    typeof settings['etag fn'] === 'function'
  )
    return false;
  const headers = res.req.headers;
  return (
    headers['if-none-match'] === undefined &&
    headers['if-modified-since'] === undefined &&
    !res.hasHeader('content-type') &&
    !res.hasHeader('transfer-encoding')
  );
}

/** Answers `value` as JSON, byte for byte as `res.json(value)` does. */
export function answerJson(res: Response, value: unknown): void {
  const body = plain(res) ? JSON.stringify(value) : undefined;
  // JSON.stringify(undefined) is no JSON text: Express then sends no body (and no charset).
  if (body === undefined) res.json(value);
  else write(res, body);
}

/**
 * Answers a value given as its JSON text, which must be exactly `JSON.stringify` of the value:
 * byte for byte as `res.json(JSON.parse(text))` does, without parsing it unless Express writes it.
 */
export function answerJsonText(res: Response, text: string): void {
  if (plain(res)) write(res, text);
  else res.json(JSON.parse(text));
}

function write(res: Response, body: string): void {
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.writeHead(200);
  if (res.req.method === 'HEAD') res.end();
  else res.end(body, 'utf8');
}
