/**
 * Reading the loader's inputs: an NMDC Database JSON stream (`{"study_set": [...], ...}`) cut into
 * the raw text of each record without building the whole document, or JSON lines of one
 * collection; each record parsed (a MongoDB export's `_id` dropped) or reported unreadable with
 * its place.
 */
import type { Readable } from 'node:stream';
import {
  CLOSE_ARRAY as CLOSE_BRACKET,
  CLOSE_OBJECT as CLOSE_BRACE,
  OPEN_ARRAY as OPEN_BRACKET,
  OPEN_OBJECT as OPEN_BRACE,
  QUOTE,
} from '../store/nesting.ts';
import { isDatabaseType } from '../schema/nmdc.ts';

export type InputFormat = { kind: 'database' } | { kind: 'jsonl'; collection: string };

/**
 * The most characters of JSON text one record may take (an element of a collection, or a line of
 * JSON lines). A longer one is reported and skipped without being held: MongoDB keeps a document
 * of at most 16 MiB, and no record the service could store comes near this.
 */
export const MAX_RECORD_CHARS = 64 * 1024 * 1024;
/** The most characters of a top-level key, or of a top-level value that is not a collection. */
const MAX_TOP_CHARS = 64 * 1024;

interface RawRecord {
  collection: string;
  /** The record's index in its collection (its array in Database JSON; its record number in JSON lines). */
  index: number;
  position: string;
  /** The record's JSON text, or (when it cannot be read) `unreadable`, why. */
  text?: string;
  unreadable?: string;
}

const COLON = 58;
const COMMA = 44;
const NEWLINE = 10;

/** An input that is not the JSON it should be, with the line where that shows. */
export class UnreadableInput extends Error {}

/**
 * The text of one value read across chunks, held up to `max` characters and past that only
 * counted (`end` then answers undefined). Each chunk's part is sliced once and joined at the end,
 * so a value spread over many chunks costs its length, not its length times the chunks.
 */
class ValueText {
  private parts: string[] = [];
  /** Where the value's text starts in the chunk being read. */
  private from = 0;
  private chars = 0;

  constructor(private readonly max: number) {}

  start(at: number): void {
    this.parts = [];
    this.chars = 0;
    this.from = at;
  }

  /** The chunk ended inside the value. */
  carry(chunk: string): void {
    this.chars += chunk.length - this.from;
    if (this.chars <= this.max) this.parts.push(this.from === 0 ? chunk : chunk.slice(this.from));
    else this.parts = [];
    this.from = 0;
  }

  /** The value ends before `at` in `chunk`: its text, or undefined when longer than `max`. */
  end(chunk: string, at: number): string | undefined {
    this.chars += at - this.from;
    if (this.chars > this.max) {
      this.parts = [];
      return undefined;
    }
    const last = chunk.slice(this.from, at);
    const text = this.parts.length === 0 ? last : this.parts.join('') + last;
    this.parts = [];
    return text;
  }
}

/** `chunk.indexOf(char, from)`, or the chunk's length when it is not there. */
function indexOrEnd(chunk: string, char: string, from: number): number {
  const at = chunk.indexOf(char, from);
  return at < 0 ? chunk.length : at;
}

/**
 * Where one JSON value ends, read across chunks: brackets are counted outside strings, and the
 * value's meaning is left to `JSON.parse`. Strings are skipped with `indexOf`, not code unit by
 * code unit.
 */
class ValueEnd {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private kind: 'container' | 'string' | 'scalar' = 'scalar';
  /** Line breaks met outside strings (JSON allows none inside them). */
  lines = 0;

  /** Begins a value whose first code unit is `c`; answers where its scan goes on (after `c`, or at it). */
  begin(c: number, at: number): number {
    this.escaped = false;
    this.inString = false;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.kind = 'container';
      this.depth = 1;
      return at + 1;
    }
    if (c === QUOTE) {
      this.kind = 'string';
      this.inString = true;
      return at + 1;
    }
    this.kind = 'scalar';
    return at;
  }

  /** Reads `chunk` from `i`: the index just past the value, or -1 when the chunk ends first. */
  scan(chunk: string, i: number): number {
    const n = chunk.length;
    let quote = -1;
    let backslash = -1;
    while (i < n) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        if (quote < i) quote = indexOrEnd(chunk, '"', i);
        if (backslash < i) backslash = indexOrEnd(chunk, '\\', i);
        if (backslash < quote) {
          this.escaped = true;
          i = backslash + 1;
          continue;
        }
        if (quote === n) return -1;
        this.inString = false;
        i = quote + 1;
        if (this.kind === 'string') return i;
        continue;
      }
      const c = chunk.charCodeAt(i);
      if (this.kind === 'scalar') {
        if (c <= 32 || c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE) return i;
      } else if (c === QUOTE) this.inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) this.depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (--this.depth === 0) return i + 1;
      } else if (c === NEWLINE) this.lines++;
      i++;
    }
    return -1;
  }
}

/** What the top level of Database JSON expects next. */
type Expect = 'object' | 'key or end' | 'key' | 'colon' | 'value' | 'comma or end' | 'nothing';
/** What a collection's array expects next. */
type ArrayExpect = 'record or end' | 'record' | 'comma or end';

/** How a top-level value that is not an array is described. */
function kindOf(value: unknown): string {
  if (value === undefined) return `a value of more than ${MAX_TOP_CHARS / 1024} KiB`;
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return 'a number';
  if (typeof value === 'boolean') return `${value}`;
  return 'an object';
}

/**
 * Cuts an NMDC Database JSON stream (`{"study_set": [...], ...}`) into the raw text of each
 * record without building the whole document. The top level is read strictly: one object whose
 * values are arrays of records, `null` (no records) or the `@type` "Database", and nothing after
 * it; anything else there ends the read with an `UnreadableInput` naming the line, or (a value
 * that is not an array) is reported in its key's place. The records themselves are left to
 * `JSON.parse`.
 */
class DatabaseScanner {
  private expect: Expect = 'object';
  private arrayExpect: ArrayExpect = 'record or end';
  /** The collection whose array is being read. */
  private collection: string | undefined;
  private key = '';
  private index = 0;
  /** What the value being read is, if one is. */
  private reading: 'key' | 'top value' | 'record' | undefined;
  private readonly end = new ValueEnd();
  private readonly recordText = new ValueText(MAX_RECORD_CHARS);
  private readonly topText = new ValueText(MAX_TOP_CHARS);
  private newlines = 0;

  private get line(): number {
    return this.newlines + this.end.lines + 1;
  }

  private refuse(what: string): never {
    throw new UnreadableInput(`not NMDC Database JSON (line ${this.line}): ${what}`);
  }

  private found(chunk: string, i: number): string {
    return JSON.stringify(chunk[i]);
  }

  *feed(chunk: string): Generator<RawRecord> {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.reading !== undefined) {
        const text = this.textOf(this.reading);
        const at = this.end.scan(chunk, i);
        if (at < 0) break;
        i = at;
        const read = this.reading;
        this.reading = undefined;
        if (read === 'record') yield this.record(text.end(chunk, at));
        else if (read === 'key') this.keyRead(text.end(chunk, at));
        else {
          const problem = this.topValueRead(text.end(chunk, at));
          if (problem) yield problem;
        }
        continue;
      }
      const c = chunk.charCodeAt(i);
      if (c === NEWLINE) this.newlines++;
      if (c === 32 || c === NEWLINE || c === 13 || c === 9) {
        i++;
        continue;
      }
      i = this.collection === undefined ? this.topLevel(chunk, i, c) : this.inArray(chunk, i, c);
    }
    // The chunk ended inside a value (or right after its first code unit).
    if (this.reading !== undefined) this.textOf(this.reading).carry(chunk);
  }

  private textOf(reading: 'key' | 'top value' | 'record'): ValueText {
    return reading === 'record' ? this.recordText : this.topText;
  }

  /** Begins reading a value at `i` into `text`; answers where the scan goes on. */
  private read(what: 'key' | 'top value' | 'record', text: ValueText, c: number, i: number): number {
    this.reading = what;
    text.start(i);
    return this.end.begin(c, i);
  }

  private topLevel(chunk: string, i: number, c: number): number {
    switch (this.expect) {
      case 'object':
        if (c !== OPEN_BRACE)
          this.refuse(`the input must be one JSON object of collections ({"study_set": [...], ...}); it begins with ${this.found(chunk, i)}`);
        this.expect = 'key or end';
        return i + 1;
      case 'key or end':
      case 'key':
        if (c === CLOSE_BRACE && this.expect === 'key or end') {
          this.expect = 'nothing';
          return i + 1;
        }
        if (c !== QUOTE) this.refuse(`expected a collection name in quotes, found ${this.found(chunk, i)}`);
        return this.read('key', this.topText, c, i);
      case 'colon':
        if (c !== COLON) this.refuse(`expected ':' after ${JSON.stringify(this.key)}, found ${this.found(chunk, i)}`);
        this.expect = 'value';
        return i + 1;
      case 'value':
        this.expect = 'comma or end';
        if (c === OPEN_BRACKET) {
          this.collection = this.key;
          this.index = 0;
          this.arrayExpect = 'record or end';
          return i + 1;
        }
        return this.read('top value', this.topText, c, i);
      case 'comma or end':
        if (c === COMMA) this.expect = 'key';
        else if (c === CLOSE_BRACE) this.expect = 'nothing';
        else this.refuse(`expected ',' or '}' after the value of ${JSON.stringify(this.key)}, found ${this.found(chunk, i)}`);
        return i + 1;
      case 'nothing':
        return this.refuse(`found ${this.found(chunk, i)} after the end of the top-level object`);
    }
  }

  private inArray(chunk: string, i: number, c: number): number {
    if (this.arrayExpect === 'comma or end') {
      if (c === COMMA) this.arrayExpect = 'record';
      else if (c === CLOSE_BRACKET) this.collection = undefined;
      else
        this.refuse(
          `expected ',' or ']' after ${this.collection}[${this.index - 1}], found ${this.found(chunk, i)}`,
        );
      return i + 1;
    }
    if (c === CLOSE_BRACKET && this.arrayExpect === 'record or end') {
      this.collection = undefined;
      return i + 1;
    }
    if (c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE || c === COLON)
      this.refuse(`expected the record ${this.collection}[${this.index}], found ${this.found(chunk, i)}`);
    return this.read('record', this.recordText, c, i);
  }

  private record(text: string | undefined): RawRecord {
    const index = this.index++;
    const collection = this.collection!;
    this.arrayExpect = 'comma or end';
    const position = `${collection}[${index}]`;
    return text === undefined
      ? { collection, index, position, unreadable: `record is more than ${MAX_RECORD_CHARS / 2 ** 20} MiB of JSON` }
      : { collection, index, position, text };
  }

  private keyRead(text: string | undefined): void {
    if (text === undefined) this.refuse(`a key of more than ${MAX_TOP_CHARS / 1024} KiB`);
    try {
      this.key = JSON.parse(text) as string;
    } catch {
      this.refuse(`a key that is not a JSON string: ${text.slice(0, 80)}`);
    }
    this.expect = 'colon';
  }

  /** A top-level value other than an array: null and the `@type` are fine, the rest is reported. */
  private topValueRead(text: string | undefined): RawRecord | undefined {
    let value: unknown;
    if (text !== undefined)
      try {
        value = JSON.parse(text);
      } catch {
        this.refuse(`the value of ${JSON.stringify(this.key)} is not JSON`);
      }
    if (value === null || (this.key === '@type' && isDatabaseType(value))) return undefined;
    const key = this.key;
    return {
      collection: key,
      index: 0,
      position: key,
      unreadable: `${JSON.stringify(key)} holds ${kindOf(value)}, not an array of records`,
    };
  }

  /** The input ended: it must have ended the top-level object. */
  finish(): void {
    if (this.expect === 'object') this.refuse('the input is empty');
    if (this.expect !== 'nothing' || this.reading !== undefined || this.collection !== undefined)
      this.refuse('the input ended inside the top-level object (truncated file?)');
  }
}

async function* databaseRecords(
  input: AsyncIterable<string>,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  const scanner = new DatabaseScanner();
  for await (const chunk of input) {
    counter.bytes += Buffer.byteLength(chunk);
    yield* scanner.feed(chunk);
  }
  scanner.finish();
}

/** JSON lines, one record a line; blank lines are skipped, and a line longer than MAX_RECORD_CHARS reported. */
async function* jsonLineRecords(
  input: AsyncIterable<string>,
  collection: string,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  let line = 0;
  let index = 0;
  const text = new ValueText(MAX_RECORD_CHARS);
  let inLine = false;
  const lineRead = (raw: string | undefined): RawRecord | undefined => {
    line++;
    const position = `${collection}[${index}] (line ${line})`;
    if (raw === undefined)
      return {
        collection,
        index: index++,
        position,
        unreadable: `line is more than ${MAX_RECORD_CHARS / 2 ** 20} MiB of JSON`,
      };
    const body = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (body.trim() === '') return undefined;
    return { collection, index: index++, position, text: body };
  };
  for await (const chunk of input) {
    counter.bytes += Buffer.byteLength(chunk);
    let from = 0;
    for (;;) {
      if (!inLine) text.start(from);
      inLine = true;
      const newline = chunk.indexOf('\n', from);
      if (newline < 0) {
        text.carry(chunk);
        break;
      }
      inLine = false;
      const record = lineRead(text.end(chunk, newline));
      if (record) yield record;
      from = newline + 1;
    }
  }
  if (inLine) {
    const record = lineRead(text.end('', 0));
    if (record) yield record;
  }
}

/** One record read from an input: parsed (without a MongoDB `_id`), or why it could not be. */
export interface ReadRecord {
  collection: string;
  index: number;
  position: string;
  record?: Record<string, unknown> | unknown;
  unreadable?: string;
}

/**
 * The records of `input`, parsed or reported unreadable in their place. An input that cannot be
 * read as a whole (not the JSON its format says, a broken gzip stream) ends the iteration with an
 * `UnreadableInput` whose message begins with `source`.
 */
export async function* readRecords(
  input: Readable,
  format: InputFormat,
  counter: { bytes: number },
  source = 'input',
): AsyncGenerator<ReadRecord> {
  input.setEncoding?.('utf8');
  const chunks = input as AsyncIterable<string>;
  const raw =
    format.kind === 'database'
      ? databaseRecords(chunks, counter)
      : jsonLineRecords(chunks, format.collection, counter);
  try {
    for await (const { collection, index, position, text, unreadable } of raw) {
      if (text === undefined) {
        yield { collection, index, position, unreadable: unreadable ?? 'record could not be read' };
        continue;
      }
      yield { collection, index, position, ...parsed(text) };
    }
  } catch (err) {
    throw new UnreadableInput(`${source}: ${inputProblem(err)}`, { cause: err });
  }
}

/** A record's text parsed (a MongoDB export's `_id` dropped), or why it is not JSON. */
function parsed(text: string): { record: unknown } | { unreadable: string } {
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch (err) {
    return { unreadable: `not valid JSON: ${(err as Error).message}` };
  }
  // MongoDB exports carry `_id`, which is no part of an NMDC record.
  if (record !== null && typeof record === 'object' && !Array.isArray(record)) {
    const { _id, ...fields } = record as Record<string, unknown>;
    record = fields;
  }
  return { record };
}

/** What went wrong reading an input, said for its reader. */
function inputProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('Z_'))
    return `not a complete gzip file (${message}; truncated or not gzip?)`;
  return message;
}

/** The input format a file name implies: `biosample_set.jsonl[.gz]` is JSON lines of that collection. */
export function formatOfFile(fileName: string): InputFormat {
  const base = fileName.split(/[\\/]/).pop()!.replace(/\.gz$/, '');
  const lines = /^(.+)\.(jsonl|ndjson)$/.exec(base);
  if (lines) return { kind: 'jsonl', collection: lines[1]! };
  return { kind: 'database' };
}
