/**
 * Large JSON bodies read and parsed taking turns with other requests. `JSON.parse` of a body is one
 * call: about 7 ms per MB here, over a second for a submission of 10^5 biosamples (142 MB), during
 * which the process answers nothing else; so is the nesting check before it. A body of at least
 * `minBytes` that express.json would read (`application/json`, UTF-8, not compressed, its length
 * given) is read here instead, scanned a slice per turn of the event loop as its bytes come (its
 * nesting checked on the way), and parsed in pieces: the elements of its arrays (the top-level
 * array's, or those of the top-level object's members), a group of about a megabyte per turn as
 * soon as the group's bytes are in, and the rest as one small skeleton at the end. The value is
 * what `JSON.parse` answers for the whole text; a body that is not
 * JSON is refused as express.json refuses it (422 `Request body is not valid JSON: ...`), with
 * where in the body the error lies. Anything else goes on to express.json.
 *
 * Such a body is bulk work (turns.ts): while other requests come to the process, its scanning and
 * parsing, and whatever its route then does in turns, give way to them.
 */
import { AsyncResource } from 'node:async_hooks';
import { parse as parseContentType } from 'content-type';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { JsonTooDeep } from '../../errors.ts';
import { asBulkWork, inLaterTurn, nextTurn } from '../../turns.ts';
import type { JsonObserver } from '../../json-stream.ts';
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
/** Work on a body's bytes per turn of the event loop while they come (`JsonReader.later`). */
const WORK_PER_TURN_MS = 8;
/** Pieces of a body smaller than this are copied together, into pieces of SMALL_PIECES bytes. */
const SMALL_PIECE = 4096;
const SMALL_PIECES = 64 * 1024;

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
 * A body's bytes as they came, in the pieces they came in: kept as they are, not joined (joining
 * as they come copies the body over and over, and its growing buffers set off collections that
 * held the event loop 0.1-0.2 s for a submission of 10^5 biosamples). Positions are the body's.
 */
class Pieces {
  readonly list: Buffer[] = [];
  /** Where each piece starts in the body. */
  readonly starts: number[] = [];
  length = 0;
  /** Small pieces are copied together into the last piece, up to SMALL_PIECES bytes (see `push`). */
  private small: Buffer | null = null;
  private smallLength = 0;

  /**
   * Keeps `piece` (as it is: do not change it). Small ones are copied together: a client sending a
   * byte at a time would otherwise cost an object per byte.
   */
  push(piece: Buffer): void {
    if (piece.length === 0) return;
    if (piece.length < SMALL_PIECE) {
      if (!this.small || this.smallLength + piece.length > this.small.length) {
        this.small = Buffer.allocUnsafe(SMALL_PIECES);
        this.smallLength = 0;
        this.starts.push(this.length);
        this.list.push(this.small.subarray(0, 0));
      }
      piece.copy(this.small, this.smallLength);
      this.smallLength += piece.length;
      this.list[this.list.length - 1] = this.small.subarray(0, this.smallLength);
      this.length += piece.length;
      return;
    }
    this.small = null;
    this.starts.push(this.length);
    this.list.push(piece);
    this.length += piece.length;
  }

  /** The piece holding position `at` (< length). */
  find(at: number): number {
    let lo = 0;
    let hi = this.list.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  byteAt(at: number): number {
    const k = this.find(at);
    return this.list[k]![at - this.starts[k]!]!;
  }

  /** The UTF-8 text of bytes `from` to `to` (exclusive). */
  text(from: number, to: number): string {
    if (from >= to) return '';
    const first = this.find(from);
    const last = this.find(to - 1);
    const start = from - this.starts[first]!;
    if (first === last) return this.list[first]!.toString('utf8', start, to - this.starts[first]!);
    const parts = [this.list[first]!.subarray(start)];
    for (let k = first + 1; k < last; k++) parts.push(this.list[k]!);
    parts.push(this.list[last]!.subarray(0, to - this.starts[last]!));
    // Joined as bytes first: a piece may end inside a character.
    return Buffer.concat(parts).toString('utf8');
  }
}

/**
 * One pass over the body's bytes, a slice at a time as they come: the depth (refused past the
 * limit), the arrays to split and their elements, and the top-level object's members (their keys'
 * text). Text that is not JSON is not judged here: it stays in a piece that `JSON.parse` refuses.
 * A string still open at the end of the bytes so far is taken up again with more.
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
    private readonly pieces: Pieces,
    /** Where the value starts (after a byte order mark and spaces). */
    readonly start: number,
  ) {
    this.at = start;
    this.splitDepth = pieces.byteAt(start) === OPEN_ARRAY ? 1 : 2;
  }

  get done(): boolean {
    return this.at >= this.pieces.length;
  }

  /** Scans up to `end` (at most the bytes so far), a piece at a time. */
  scan(end: number): void {
    let i = this.at;
    while (i < end) {
      const k = this.pieces.find(i);
      const piece = this.pieces.list[k]!;
      const base = this.pieces.starts[k]!;
      const stop = Math.min(end, base + piece.length);
      while (i < stop) {
        if (this.inString) {
          const q = this.stringEnd(piece, base, i);
          // Not closed in this piece: taken up again in the next, or, at the end, the skeleton's
          // parse refuses it.
          i = q < 0 ? base + piece.length : q + 1;
          continue;
        }
        this.step(piece[i - base]!, i);
        i++;
      }
    }
    this.at = i;
  }

  /** The byte `c` at position `i`, outside strings. */
  private step(c: number, i: number): void {
    if (isSpace(c)) return;
    if (this.current && this.depth === this.splitDepth) {
      if (c === COMMA) {
        this.endElement(i);
        this.current.start = i + 1;
        return;
      }
      if (c === CLOSE_ARRAY) {
        const { array } = this.current;
        if (this.current.content || array.elements.length > 0) this.endElement(i);
        array.close = i;
        this.current = null;
        this.depth--;
        return;
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

  /**
   * Where in the body the open string ends (its closing quote), searching `piece` from `i`; -1
   * when not in it.
   */
  private stringEnd(piece: Buffer, base: number, i: number): number {
    // To the next quote not escaped (an odd run of backslashes before it escapes it).
    for (let q = i - base; ; q++) {
      q = piece.indexOf(QUOTE, q);
      if (q < 0) return -1;
      let backslashes = 0;
      for (let b = base + q - 1; b > this.stringStart; b--) {
        const byte = b >= base ? piece[b - base]! : this.pieces.byteAt(b);
        if (byte !== BACKSLASH) break;
        backslashes++;
      }
      if (backslashes % 2 === 1) continue;
      this.inString = false;
      if (this.splitDepth === 2 && this.depth === 1 && this.expecting === 'key')
        this.key = [this.stringStart, base + q + 1];
      return base + q;
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

/**
 * A JSON body read as its bytes come: each piece is scanned when it arrives, and the split arrays'
 * elements are parsed a group at a time as soon as a group is whole, so that little is left to do
 * once the last byte is in (for a body coming over a network, nothing but its last groups). The
 * value is what `JSON.parse` answers for the whole text. Whatever the bytes are, their refusal
 * waits for the end of the body and is the one reading them all at once would give: the scan's
 * (too deep, an element missing) before any parse's.
 */
export class JsonReader {
  /** The bytes so far (memory follows what was sent). */
  private readonly pieces = new Pieces();
  private scanner: Scanner | null = null;
  /** Each split array's elements parsed so far, and the next one to parse. */
  private readonly parsed = new Map<SplitArray, { values: unknown[]; next: number }>();
  /** The refusal met while the bytes came, thrown at the end. */
  private refusal: unknown;
  /**
   * False once a parse failed while the bytes came: the elements are parsed again at the end,
   * after the scan, whose refusal comes first.
   */
  private parsing = true;
  /** Work on the bytes so far is scheduled (`later`); or `finish` has begun, which does the rest. */
  private scheduled = false;
  private finishing = false;
  /** Told of the elements as they are parsed (`observe`); dropped once abandoned. */
  private observer: JsonObserver | undefined;
  /** Where the body's reading stands, for an observer that comes late. */
  private stage: 'reading' | 'received' | 'ended' | 'abandoned' = 'reading';
  /** The key text of each split array's member, read once. */
  private readonly keys = new Map<SplitArray, string | undefined>();

  /**
   * Takes the next bytes (kept as they are: do not change them). They are scanned and their whole
   * groups parsed in later turns of the event loop (`later`), not here: a socket hands over many
   * pieces in one turn.
   */
  append(piece: Buffer): void {
    if (this.refusal !== undefined) return;
    this.pieces.push(piece);
    this.later();
  }

  /**
   * Tells `observer` of every element parsed so far, then of the others as they are; one observer
   * per body. Elements parsed again at the end (after a piece failed to parse while the bytes came)
   * are not told: the observer is abandoned then.
   */
  observe(observer: JsonObserver): void {
    if (this.observer) throw new Error('a JSON body has one observer');
    // A refusal, or a piece that failed to parse, abandons the body (`abandon`).
    if (this.stage === 'abandoned') {
      observer.abandon();
      return;
    }
    this.observer = observer;
    (this.scanner?.arrays ?? []).forEach((array, i) => {
      const values = this.parsed.get(array)?.values;
      if (values && values.length > 0) observer.elements(this.keyOf(array), values.slice(), i);
    });
    if (this.stage !== 'reading') observer.received();
    if (this.stage === 'ended') observer.end();
  }

  /** Every byte of the body has come (the reader of the request says so). */
  received(): void {
    if (this.stage !== 'reading') return;
    this.stage = 'received';
    this.observer?.received();
  }

  /** The body is refused or its reading given up: the observer hears no more. */
  abandon(): void {
    if (this.stage === 'abandoned' || this.stage === 'ended') return;
    this.stage = 'abandoned';
    const observer = this.observer;
    this.observer = undefined;
    observer?.abandon();
  }

  /** The key of the member whose value `array` is (undefined for the top-level array). */
  private keyOf(array: SplitArray): string | undefined {
    if (array.member === undefined || !this.scanner) return undefined;
    if (!this.keys.has(array)) {
      const [s, e] = this.scanner.members[array.member]!;
      this.keys.set(array, JSON.parse(this.pieces.text(s, e)) as string);
    }
    return this.keys.get(array);
  }

  /**
   * Scans and parses what came, in a turn of its own of at most WORK_PER_TURN_MS, then in the
   * next as long as there is more; stops at a refusal (kept for `finish`) and once `finish` began.
   */
  private later(worked = 0): void {
    if (this.scheduled || this.finishing || this.refusal !== undefined) return;
    this.scheduled = true;
    // As bulk work (a large body's), it gives way to other requests between turns (turns.ts).
    inLaterTurn(worked, () => {
      this.scheduled = false;
      if (this.finishing) return;
      const start = performance.now();
      const until = start + WORK_PER_TURN_MS;
      try {
        let more = true;
        while (more && performance.now() < until) more = this.advance(false);
        if (more) this.later(performance.now() - start);
      } catch (err) {
        this.refusal = err;
        this.abandon();
      }
    });
  }

  /** Elements of the split arrays parsed so far. */
  get elementsParsed(): number {
    let n = 0;
    for (const { next } of this.parsed.values()) n += next;
    return n;
  }

  /**
   * Scans a slice of what came, or else parses one group (`last`: the body is all in); false when
   * there is nothing to do.
   */
  private advance(last: boolean): boolean {
    const scanner = this.scanner ?? (this.scanner = this.begin(last));
    if (!scanner) return false;
    if (!scanner.done) {
      scanner.scan(Math.min(this.pieces.length, scanner.at + SCAN_SLICE));
      return true;
    }
    return this.parseGroup(last);
  }

  /**
   * The scanner, once the first byte of the value is in (after a UTF-8 byte order mark and
   * spaces); null while it is not, or (`last`) for an empty body.
   */
  private begin(last: boolean): Scanner | null {
    const { length } = this.pieces;
    const byteAt = (at: number) => this.pieces.byteAt(at);
    // As express.json: a UTF-8 byte order mark is dropped, an empty body is {}, and only an object
    // or an array is a body.
    if (length < 3 && !last) return null;
    let start = length >= 3 && byteAt(0) === 0xef && byteAt(1) === 0xbb && byteAt(2) === 0xbf ? 3 : 0;
    if (start === length && last) return null;
    while (start < length && isSpace(byteAt(start))) start++;
    if (start >= length) {
      if (last) throw notJson('Unexpected end of JSON input');
      return null;
    }
    const first = byteAt(start);
    if (first !== OPEN_OBJECT && first !== OPEN_ARRAY)
      throw notJson(
        `Unexpected token '${String.fromCharCode(first)}' at position ${start}: a JSON body is an object or an array`,
      );
    return new Scanner(this.pieces, start);
  }

  /**
   * Parses the next group of elements of the first split array with elements left: a whole group
   * (a later element, or the array's end, came after it), or (`last`) whatever is left. False
   * when there was none.
   */
  private parseGroup(last: boolean): boolean {
    const scanner = this.scanner;
    if (!scanner || !this.parsing) return false;
    for (const [ordinal, array] of scanner.arrays.entries()) {
      let state = this.parsed.get(array);
      if (!state) this.parsed.set(array, (state = { values: [], next: 0 }));
      const { elements } = array;
      if (state.next >= elements.length) {
        if (array.close < 0) return false; // its next elements are still coming
        continue;
      }
      const first = elements[state.next]![0];
      let end = state.next;
      while (end + 1 < elements.length && elements[end + 1]![1] - first <= PARSE_GROUP) end++;
      if (!last && end + 1 === elements.length && array.close < 0) return false; // may still grow
      const to = elements[end]![1];
      let group: unknown[];
      try {
        group = parsePiece(`[${this.pieces.text(first, to)}]`, first, to) as unknown[];
      } catch (err) {
        if (last) throw err;
        this.parsing = false; // the scan, to the end, may refuse the body first
        this.abandon();
        return false;
      }
      for (const v of group) state.values.push(v);
      state.next = end + 1;
      this.observer?.elements(this.keyOf(array), group, ordinal);
      return true;
    }
    return false;
  }

  /** The value, once every byte is in: the rest scanned and parsed, a turn between slices and groups. */
  async finish(): Promise<unknown> {
    this.received();
    let value: unknown;
    try {
      value = await this.value();
    } catch (err) {
      this.abandon();
      throw err;
    }
    if (this.stage !== 'abandoned') {
      this.stage = 'ended';
      this.observer?.end();
    }
    return value;
  }

  private async value(): Promise<unknown> {
    this.finishing = true;
    if (this.refusal !== undefined) throw this.refusal;
    if (!this.parsing) {
      this.parsing = true;
      this.parsed.clear();
    }
    while (this.advance(true)) await nextTurn();
    const scanner = this.scanner;
    if (!scanner) return {};
    const { pieces } = this;
    // The skeleton: the body with every split array's elements left out.
    const parts: string[] = [];
    let from = scanner.start;
    for (const array of scanner.arrays) {
      if (array.close < 0) throw notJson('Unexpected end of JSON input');
      parts.push(pieces.text(from, array.open + 1));
      from = array.close;
    }
    parts.push(pieces.text(from, pieces.length));
    const skeleton = parsePiece(parts.join(''), 0, pieces.length) as Record<string, unknown> | unknown[];
    // A member's array is its value only if no later member has the same key (JSON.parse keeps the last).
    const keys = scanner.members.map(([s, e]) => JSON.parse(pieces.text(s, e)) as string);
    const lastOfKey = new Map<string, number>();
    keys.forEach((key, i) => lastOfKey.set(key, i));
    for (const array of scanner.arrays) {
      const values = this.parsed.get(array)?.values ?? [];
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
}

/** The value of a JSON body (a Buffer of UTF-8), read with turns of the event loop between slices. */
export async function parseJsonInTurns(bytes: Buffer): Promise<unknown> {
  const reader = new JsonReader();
  reader.append(bytes);
  return reader.finish();
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
 * The value of a JSON body of `length` bytes (its Content-Length, within the limit), read as it
 * comes (`JsonReader`). Raw-body's read and single concat held the event loop for 100-200 ms for a
 * submission of 10^5 biosamples, and the scan and parse started only after it.
 */
function readJsonBody(req: Request, length: number, reader: JsonReader): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let settled = false;
    // The listeners run as the bulk work the body was begun in (asBulkWork), not as the socket's.
    const settle = AsyncResource.bind((err: Error | undefined) => {
      if (settled) return;
      settled = true;
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) {
        reader.abandon();
        reject(err);
      } else reader.finish().then(resolve, reject);
    });
    const onData = AsyncResource.bind((chunk: Buffer) => {
      received += chunk.length;
      if (received > length) settle(sizeMismatch(length, received));
      else reader.append(chunk);
    });
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
export function jsonBodiesInTurns(options: {
  limit: number;
  minBytes: number;
  /** Called as such a body begins to be read (a large write is likely to follow). */
  onLarge?: () => void;
  /** Called as such a body begins to be read, with its reader (to observe its records as they come). */
  observe?: (req: Request, reader: JsonReader) => void;
}): RequestHandler {
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
    options.onLarge?.();
    // Bulk work from here on (its reading, parsing and whatever the route does with it): it gives
    // way to other requests (turns.ts).
    asBulkWork(() => {
      const reader = new JsonReader();
      options.observe?.(req, reader);
      readJsonBody(req, length, reader).then(
        (body) => {
          req.body = body;
          next();
        },
        (err: Error) => {
          req.resume();
          next(err);
        },
      );
    });
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
 * The service's JSON body readers, up to `limit` bytes: large bodies in turns (`onLarge` is called
 * as one begins, `observe` with its reader), the others (and those this cannot read: compressed,
 * another charset, no length given) by express.json.
 */
export function jsonBodies(
  limit: number,
  {
    minBytes = IN_TURNS_FROM_BYTES,
    onLarge,
    observe,
  }: {
    minBytes?: number;
    onLarge?: () => void;
    observe?: (req: Request, reader: JsonReader) => void;
  } = {},
): RequestHandler[] {
  return [
    jsonBodiesInTurns({ limit, minBytes, onLarge, observe }),
    express.json({ limit, verify: refuseDeepJson }),
  ];
}
