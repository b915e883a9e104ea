/**
 * Reading the loader's inputs: an NMDC Database JSON stream (`{"study_set": [...], ...}`) cut into
 * the raw text of each record without building the whole document, or JSON lines of one
 * collection; each record parsed (a MongoDB export's `_id` dropped) or reported unreadable with
 * its place.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import {
  BACKSLASH,
  CLOSE_ARRAY as CLOSE_BRACKET,
  CLOSE_OBJECT as CLOSE_BRACE,
  OPEN_ARRAY as OPEN_BRACKET,
  OPEN_OBJECT as OPEN_BRACE,
  QUOTE,
} from '../store/nesting.ts';

export type InputFormat = { kind: 'database' } | { kind: 'jsonl'; collection: string };

interface RawRecord {
  collection: string;
  /** The record's index in its collection (its array in Database JSON; its record number in JSON lines). */
  index: number;
  position: string;
  text: string;
}

const COLON = 58;

/**
 * Cuts an NMDC Database JSON stream into the raw text of each record without building the
 * whole document: it tracks nesting and strings, and hands back each element of the
 * top-level arrays. Values of other top-level keys are skipped.
 */
async function* databaseRecords(
  input: AsyncIterable<string>,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let key = '';
  let keyStart = -1; // start of a top-level key string within the carry text
  let lastKey: string | undefined;
  let collection: string | undefined; // set while inside a top-level array
  let index = 0;
  let recordStart = -1;
  let carry = '';
  for await (const chunk of input) {
    counter.bytes += Buffer.byteLength(chunk);
    const text = carry + chunk;
    const base = carry.length;
    /** The element of `collection` from `recordStart` to `end`; the next one starts unknown. */
    const element = (end: number): RawRecord => {
      const found = { collection: collection!, index, position: `${collection}[${index}]`, text: text.slice(recordStart, end).trim() };
      index++;
      recordStart = -1;
      return found;
    };
    for (let i = base; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          if (depth === 1 && keyStart >= 0) {
            key = JSON.parse(text.slice(keyStart, i + 1)) as string;
            keyStart = -1;
          }
        }
        continue;
      }
      if (c === QUOTE) {
        inString = true;
        if (depth === 1 && collection === undefined && lastKey === undefined) keyStart = i;
        else if (depth === 2 && collection !== undefined && recordStart < 0) recordStart = i;
        continue;
      }
      if (c === COLON && depth === 1) {
        lastKey = key;
        continue;
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (depth === 1 && lastKey !== undefined && c === OPEN_BRACKET) {
          collection = lastKey;
          index = 0;
        } else if (depth === 2 && collection !== undefined && recordStart < 0) recordStart = i;
        depth++;
        continue;
      }
      if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        // A scalar element last in its array ends here; an object or array element ends with it.
        if (depth === 2 && collection !== undefined && recordStart >= 0) yield element(i);
        depth--;
        if (depth === 2 && collection !== undefined && recordStart >= 0) yield element(i + 1);
        else if (depth === 1) {
          collection = undefined;
          lastKey = undefined;
        }
        continue;
      }
      if (c === 44 /* , */) {
        if (depth === 1) lastKey = undefined;
        else if (depth === 2 && collection !== undefined && recordStart >= 0) {
          // A scalar element (not an object): hand it on so it is reported, not lost.
          yield element(i);
        }
        continue;
      }
      if (depth === 2 && collection !== undefined && recordStart < 0 && c > 32) recordStart = i;
    }
    // Keep only what an unfinished record or key still needs.
    const cut = Math.min(
      recordStart >= 0 ? recordStart : text.length,
      keyStart >= 0 ? keyStart : text.length,
    );
    carry = text.slice(cut);
    if (recordStart >= 0) recordStart -= cut;
    if (keyStart >= 0) keyStart -= cut;
  }
  if (depth !== 0) throw new Error('input ended inside a JSON value (truncated file?)');
}

async function* jsonLineRecords(
  input: Readable,
  collection: string,
  counter: { bytes: number },
): AsyncGenerator<RawRecord> {
  let line = 0;
  let index = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    counter.bytes += Buffer.byteLength(text) + 1;
    if (text.trim() === '') continue;
    yield { collection, index, position: `${collection}[${index}] (line ${line})`, text };
    index++;
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

export async function* readRecords(
  input: Readable,
  format: InputFormat,
  counter: { bytes: number },
): AsyncGenerator<ReadRecord> {
  input.setEncoding?.('utf8');
  const raw =
    format.kind === 'database'
      ? databaseRecords(input as AsyncIterable<string>, counter)
      : jsonLineRecords(input, format.collection, counter);
  for await (const { collection, index, position, text } of raw) {
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch (err) {
      yield { collection, index, position, unreadable: `not valid JSON: ${(err as Error).message}` };
      continue;
    }
    // MongoDB exports carry `_id`, which is no part of an NMDC record.
    if (record !== null && typeof record === 'object' && !Array.isArray(record)) {
      const { _id, ...fields } = record as Record<string, unknown>;
      record = fields;
    }
    yield { collection, index, position, record };
  }
}

/** The input format a file name implies: `biosample_set.jsonl[.gz]` is JSON lines of that collection. */
export function formatOfFile(fileName: string): InputFormat {
  const base = fileName.split(/[\\/]/).pop()!.replace(/\.gz$/, '');
  const lines = /^(.+)\.(jsonl|ndjson)$/.exec(base);
  if (lines) return { kind: 'jsonl', collection: lines[1]! };
  return { kind: 'database' };
}
