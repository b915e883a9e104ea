/**
 * Large JSON bodies read and parsed taking turns with other requests. `JSON.parse` of a body is one
 * call: about 7 ms per MB here, over a second for a submission of 10^5 biosamples (142 MB), during
 * which the process answers nothing else; so is the nesting check before it. A body of at least
 * `minBytes` that express.json would read (`application/json`, UTF-8, not compressed, its length
 * given) is read here instead, scanned a slice per turn of the event loop (its nesting checked on
 * the way), and parsed in pieces: the elements of its arrays (the top-level array's, or those of
 * the top-level object's members), a group of about a megabyte per turn, and the rest as one
 * small skeleton. The value is what `JSON.parse` answers for the whole text; a body that is not
 * JSON is refused as express.json refuses it (422 `Request body is not valid JSON: ...`), with
 * where in the body the error lies. Anything else goes on to express.json.
 */
import { parse as parseContentType } from 'content-type';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { JsonTooDeep } from '../../errors.ts';
import { concatInTurns, nextTurn } from '../../turns.ts';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  MAX_NESTING_DEPTH,
  nestingRefusal,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  textNestsDeeper,
} from '../../store/nesting.ts';

/** Bytes scanned per turn of the event loop. */
const SCAN_SLICE = 2 * 1024 * 1024;
/** Bytes of array elements parsed per `JSON.parse` (and per turn). */
const PARSE_GROUP = 1024 * 1024;

const COMMA = 0x2c;
const COLON = 0x3a;

/** An error express.json's callers know: 400, `entity.parse.failed`. */
function notJson(message: string): Error {
  return Object.assign(new SyntaxError(message), {
    status: 400,
    statusCode: 400,
    type: 'entity.parse.failed',
  });
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** An array whose elements are parsed apart: its brackets, and where each element starts and ends. */
interface SplitArray {
  open: number;
  close: number;
  /** Start and end (exclusive) of each element, trimmed of nothing: the bytes between commas. */
  elements: Array<[number, number]>;
  /** The top-level object's member holding it (its key's text), or undefined for the top-level array. */
  member?: number;
}

/**
 * One pass over the body's bytes, a slice at a time: the depth (refused past the limit), the
 * arrays to split and their elements, and the top-level object's members (their keys' text). Text
 * that is not JSON is not judged here: it stays in a piece that `JSON.parse` refuses.
 */
class Scanner {
  depth = 0;
  at: number;
  private inString = false;
  private stringStart = 0;
  /** Nesting depth of split arrays' elements: 1 in the top-level array, 2 in the top-level object's members' arrays. */
  private readonly splitDepth: number;
  /** The array being split, its current element's start, and whether that element has content yet. */
  private current: { array: SplitArray; start: number; content: boolean } | null = null;
  readonly arrays: SplitArray[] = [];
  /** Each member of the top-level object: where its key's text starts and ends. */
  readonly members: Array<[number, number]> = [];
  /** In the top-level object: whether a key or a value comes next, and the last key read. */
  private expecting: 'key' | 'value' = 'key';
  private key: [number, number] | null = null;

  constructor(
    private readonly bytes: Buffer,
    start: number,
  ) {
    this.at = start;
    this.splitDepth = bytes[start] === OPEN_ARRAY ? 1 : 2;
  }

  get done(): boolean {
    return this.at >= this.bytes.length;
  }

  /** Scans up to `end`. */
  scan(end: number): void {
    const bytes = this.bytes;
    let i = this.at;
    for (; i < end; i++) {
      if (this.inString) {
        i = this.stringEnd(i);
        if (i < 0) {
          i = bytes.length; // unterminated: the skeleton's parse refuses it
          break;
        }
        continue;
      }
      const c = bytes[i]!;
      if (isSpace(c)) continue;
      if (this.current && this.depth === this.splitDepth) {
        if (c === COMMA) {
          this.endElement(i);
          this.current.start = i + 1;
          continue;
        }
        if (c === CLOSE_ARRAY) {
          const { array } = this.current;
          if (this.current.content || array.elements.length > 0) this.endElement(i);
          array.close = i;
          this.current = null;
          this.depth--;
          continue;
        }
        this.current.content = true;
      }
      const inTopObject = this.splitDepth === 2 && this.depth === 1;
      if (c === QUOTE) {
        this.inString = true;
        this.stringStart = i;
      } else if (inTopObject && c === COLON) {
        if (this.expecting === 'key' && this.key) this.members.push(this.key);
        this.expecting = 'value';
        this.key = null;
      } else if (inTopObject && c === COMMA) {
        this.expecting = 'key';
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (++this.depth > MAX_NESTING_DEPTH) throw new JsonTooDeep(nestingRefusal('The JSON body'));
        const splits =
          c === OPEN_ARRAY &&
          this.depth === this.splitDepth &&
          (this.splitDepth === 1 || (inTopObject && this.expecting === 'value' && this.members.length > 0));
        if (splits) {
          const array: SplitArray = {
            open: i,
            close: -1,
            elements: [],
            member: this.splitDepth === 2 ? this.members.length - 1 : undefined,
          };
          this.arrays.push(array);
          this.current = { array, start: i + 1, content: false };
        }
        // A member's value has started: what follows it up to a comma is not a key.
        if (inTopObject) this.expecting = 'key';
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) this.depth--;
    }
    this.at = i;
  }

  /** The end of the string open at `i` (its closing quote), or -1 when it has none. */
  private stringEnd(i: number): number {
    const bytes = this.bytes;
    // To the next quote not escaped (an odd run of backslashes before it escapes it).
    for (let q = i; ; q++) {
      q = bytes.indexOf(QUOTE, q);
      if (q < 0) return -1;
      let backslashes = 0;
      for (let b = q - 1; b >= this.stringStart && bytes[b] === BACKSLASH; b--) backslashes++;
      if (backslashes % 2 === 1) continue;
      this.inString = false;
      if (this.splitDepth === 2 && this.depth === 1 && this.expecting === 'key')
        this.key = [this.stringStart, q + 1];
      return q;
    }
  }

  private endElement(end: number): void {
    const current = this.current!;
    // An empty element (`[1,,2]`, `[1,]`, `[,1]`): the pieces would parse, the whole would not.
    if (!current.content)
      throw notJson(`Unexpected token in JSON at position ${end}: an array element is missing`);
    current.array.elements.push([current.start, end]);
    current.content = false;
  }
}

/** `JSON.parse` of `text`, refused as express.json refuses it, naming where the text lies in the body. */
function parsePiece(text: string, from: number, to: number): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw notJson(`${(err as Error).message} (in bytes ${from}-${to} of the body)`);
  }
}

/** The value of a JSON body (a Buffer of UTF-8), read with turns of the event loop between slices. */
export async function parseJsonInTurns(bytes: Buffer): Promise<unknown> {
  let start = 0;
  // As express.json: a UTF-8 byte order mark is dropped, an empty body is {}, and only an object or
  // an array is a body.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
  if (start === bytes.length) return {};
  while (start < bytes.length && isSpace(bytes[start]!)) start++;
  if (start >= bytes.length) throw notJson('Unexpected end of JSON input');
  if (bytes[start] !== OPEN_OBJECT && bytes[start] !== OPEN_ARRAY)
    throw notJson(
      `Unexpected token '${String.fromCharCode(bytes[start]!)}' at position ${start}: a JSON body is an object or an array`,
    );
  const scanner = new Scanner(bytes, start);
  while (!scanner.done) {
    // A turn first: the body was just put together in one piece, which took a while too.
    await nextTurn();
    scanner.scan(Math.min(bytes.length, scanner.at + SCAN_SLICE));
  }
  // The skeleton: the body with every split array's elements left out.
  const parts: string[] = [];
  let from = start;
  for (const array of scanner.arrays) {
    if (array.close < 0) throw notJson('Unexpected end of JSON input');
    parts.push(bytes.toString('utf8', from, array.open + 1));
    from = array.close;
  }
  parts.push(bytes.toString('utf8', from));
  const skeleton = parsePiece(parts.join(''), 0, bytes.length) as Record<string, unknown> | unknown[];
  // A member's array is its value only if no later member has the same key (JSON.parse keeps the last).
  const keys = scanner.members.map(([s, e]) => JSON.parse(bytes.toString('utf8', s, e)) as string);
  const lastOfKey = new Map<string, number>();
  keys.forEach((key, i) => lastOfKey.set(key, i));
  for (const array of scanner.arrays) {
    const values: unknown[] = [];
    for (let g = 0; g < array.elements.length;) {
      const first = array.elements[g]![0];
      let last = g;
      while (last + 1 < array.elements.length && array.elements[last + 1]![1] - first <= PARSE_GROUP) last++;
      const to = array.elements[last]![1];
      const group = parsePiece(`[${bytes.toString('utf8', first, to)}]`, first, to) as unknown[];
      for (const v of group) values.push(v);
      g = last + 1;
      await nextTurn();
    }
    if (array.member === undefined) return values;
    const key = keys[array.member]!;
    if (lastOfKey.get(key) !== array.member) continue;
    // As JSON.parse defines it: an own property, even for "__proto__".
    Object.defineProperty(skeleton, key, {
      value: values,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return skeleton;
}

/** A body that ended before its declared length, or went on past it: 400, as raw-body says it. */
function sizeMismatch(expected: number, received: number): Error {
  return Object.assign(new Error('request size did not match content length'), {
    status: 400,
    statusCode: 400,
    type: 'request.size.invalid',
    expected,
    received,
  });
}

/**
 * The body's `length` bytes (its Content-Length, within the limit). The chunks are kept as they come,
 * so memory follows what was sent, not what was declared, and joined in turns at the end:
 * raw-body's single concat held the event loop for 100-200 ms for a submission of 10^5 biosamples.
 */
function readBody(req: Request, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const settle = (err: Error | undefined) => {
      if (settled) return;
      settled = true;
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) reject(err);
      else concatInTurns(chunks).then(resolve, reject);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > length) settle(sizeMismatch(length, received));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(received === length ? undefined : sizeMismatch(length, received));
    const onError = (err: Error) => settle(err);
    const onClose = () =>
      settle(
        Object.assign(new Error('request aborted'), {
          status: 400,
          statusCode: 400,
          type: 'request.aborted',
        }),
      );
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * Reads and parses in turns the JSON bodies of at least `minBytes` that express.json would read,
 * up to `limit` bytes; leaves the others to express.json, mounted after it.
 */
export function jsonBodiesInTurns(options: { limit: number; minBytes: number }): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const length = Number(req.headers['content-length']);
    if (!Number.isSafeInteger(length) || length < options.minBytes || length > options.limit) return next();
    if ((req.headers['content-encoding'] ?? 'identity').toLowerCase() !== 'identity') return next();
    if (!req.is('application/json')) return next();
    let charset: string | undefined;
    try {
      charset = parseContentType(req.headers['content-type'] ?? '').parameters.charset?.toLowerCase();
    } catch {
      return next();
    }
    if (charset !== undefined && charset !== 'utf-8') return next();
    readBody(req, length).then(
      (bytes) =>
        parseJsonInTurns(bytes).then((body) => {
          req.body = body;
          next();
        }, next),
      (err: Error) => {
        req.resume();
        next(err);
      },
    );
  };
}

/** Bodies from this size on are read in turns (`jsonBodiesInTurns`); smaller ones cost under 10 ms. */
export const IN_TURNS_FROM_BYTES = 1024 * 1024;

/**
 * Refuses, before it is parsed, a JSON body nested deeper than the store accepts: 400 naming the
 * limit, instead of a stack overflow in whatever walks it next.
 */
function refuseDeepJson(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  let text: Buffer | string = body;
  if (!/^utf-?8$/i.test(encoding)) {
    try {
      text = new TextDecoder(encoding).decode(body);
    } catch {
      // An encoding TextDecoder does not know: its ASCII brackets are counted as bytes.
    }
  }
  if (textNestsDeeper(text)) throw new JsonTooDeep(nestingRefusal('The JSON body'));
}

/**
 * The service's JSON body readers, up to `limit` bytes: large bodies in turns, the others (and
 * those this cannot read: compressed, another charset, no length given) by express.json.
 */
export function jsonBodies(limit: number, minBytes = IN_TURNS_FROM_BYTES): RequestHandler[] {
  return [jsonBodiesInTurns({ limit, minBytes }), express.json({ limit, verify: refuseDeepJson })];
}
