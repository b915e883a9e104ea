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
 * store keeps it) is written as it is, unparsed (`answerJsonText`), and so are the JsonTexts in a
 * plain answer (`answerLargeJson`: a page of records read as their stored texts).
 */
import express, { type Response } from 'express';
import { JsonText, jsonTextOf } from '../json-text.ts';
import { nextTurn, Turns } from '../turns.ts';

const expressJson = express.response.json;

/** The Content-Type Express gives a JSON answer (`application/json` with its charset added). */
const JSON_TYPE = 'application/json; charset=utf-8';

/** Whether `res.json` would write exactly what `answerJson` writes for a body Express can send. */
function plain(res: Response): boolean {
  return res.json === expressJson && largeAnswerable(res);
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

/** Array elements in an answer from which `answerLargeJson` writes it in turns. */
const LARGE_ANSWER_ELEMENTS = 1000;
/** Characters of JSON text per piece written (and encoded) at once. */
const PIECE_CHARS = 1024 * 1024;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  typeof (v as { toJSON?: unknown }).toJSON !== 'function';

/**
 * The size of `value` as far as `answerLargeJson` looks: the elements of its arrays, its members'
 * and theirs (three levels), and the characters of the JsonTexts among them.
 */
function sizeOf(value: unknown, depth = 0): { elements: number; textChars: number } {
  const size = { elements: 0, textChars: 0 };
  const visit = (v: unknown, d: number) => {
    if (v instanceof JsonText) size.textChars += v.text.length;
    else if (d > 2) return;
    else if (Array.isArray(v)) {
      size.elements += v.length;
      for (const element of v) if (element instanceof JsonText) size.textChars += element.text.length;
    } else if (isPlainObject(v)) for (const member of Object.values(v)) visit(member, d + 1);
  };
  visit(value, depth);
  return size;
}

/** `value` with each JsonText among its first three levels parsed (an answer small enough for `res.json`). */
function withTextsParsed(value: unknown, depth = 0): unknown {
  if (value instanceof JsonText) return JSON.parse(value.text);
  if (depth > 3) return value;
  if (Array.isArray(value)) return value.map((v) => withTextsParsed(v, depth + 1));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) out[key] = withTextsParsed(member, depth + 1);
  return out;
}

/**
 * `JSON.stringify(value)` in pieces of about PIECE_CHARS, made in turns: the arrays of the value,
 * of its members and of theirs are written an element at a time (an answer of 10^5 records is
 * over 100 MB, and its one `JSON.stringify` held the event loop for a second or more).
 */
export async function jsonPiecesInTurns(value: unknown): Promise<string[]> {
  const pieces: string[] = [];
  let piece: string[] = [];
  let chars = 0;
  const turns = new Turns();
  const add = (text: string) => {
    piece.push(text);
    chars += text.length;
    if (chars >= PIECE_CHARS) {
      pieces.push(piece.join(''));
      piece = [];
      chars = 0;
    }
  };
  const walk = async (v: unknown, depth: number): Promise<void> => {
    if (v instanceof JsonText) add(v.text);
    else if (depth <= 2 && Array.isArray(v)) {
      add('[');
      for (let i = 0; i < v.length; i++) {
        const element: unknown = v[i];
        // As JSON.stringify: an element without JSON text (undefined, a function) is null.
        const text = jsonTextOf(element);
        add(i === 0 ? (text ?? 'null') : `,${text ?? 'null'}`);
        if (turns.due()) await turns.give();
      }
      add(']');
    } else if (depth <= 2 && isPlainObject(v)) {
      add('{');
      let first = true;
      for (const [key, member] of Object.entries(v)) {
        // As JSON.stringify: a member without JSON text is left out.
        if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
        add(`${first ? '' : ','}${JSON.stringify(key)}:`);
        first = false;
        await walk(member, depth + 1);
        // Members too (a changesheet's update commands are an object of one member per record).
        if (turns.due()) await turns.give();
      }
      add('}');
    } else add(JSON.stringify(v) ?? 'null');
  };
  await walk(value, 0);
  if (piece.length > 0) pieces.push(piece.join(''));
  return pieces;
}

/**
 * Answers `value` as `answerJson` does, its JsonTexts written as they are when the answer is plain
 * (for `res.json`, which the response validator replaces, they are parsed first). One holding more
 * than LARGE_ANSWER_ELEMENTS array elements (a page of records, a cursor's batch) or more than
 * PIECE_CHARS of JsonText is made and written in turns, a piece at a time, with the same status,
 * headers and body (it is not checked against the contract on the way out, where responses are).
 */
export async function answerLargeJson(res: Response, value: unknown): Promise<void> {
  const { elements, textChars } = sizeOf(value);
  const large = elements >= LARGE_ANSWER_ELEMENTS || textChars >= PIECE_CHARS;
  // A small answer holding texts is written with them as they are, unless its JSON is checked.
  if (!large && textChars > 0 && plain(res)) return write(res, (await jsonPiecesInTurns(value)).join(''));
  if (!large || !largeAnswerable(res)) return answerJson(res, textChars > 0 ? withTextsParsed(value) : value);
  const pieces = await jsonPiecesInTurns(value);
  let bytes = 0;
  for (const piece of pieces) bytes += Buffer.byteLength(piece);
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', String(bytes));
  res.writeHead(200);
  if (res.req.method === 'HEAD') return void res.end();
  for (const piece of pieces) {
    if (res.destroyed) return;
    await writeChunk(res, piece);
    await nextTurn();
  }
  res.end();
}

/** Writes, then waits while the client is slow to read (or until it has gone away). */
export function writeChunk(res: Response, text: string): Promise<void> {
  if (res.write(text)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** As `plain`, but `res.json` may be the response validator's (large answers are not checked). */
function largeAnswerable(res: Response): boolean {
  if (res.statusCode !== 200 || res.headersSent) return false;
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
