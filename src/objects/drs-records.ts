/**
 * DRS object records (see drs.ts): the DRS object as shown, the fields a site writes and the
 * checks the contract's schema cannot make on them, and which site manages an object.
 */
import type { Doc } from '../store/port.ts';
import { Unprocessable } from '../errors.ts';

/** The manager shown for (and refused on) the service's own objects, as the original names it. */
export const RUNTIME_SITE = 'nmdc-runtime';

/** Checksum types the original accepts (Python's `hashlib.algorithms_guaranteed`). */
export const CHECKSUM_TYPES = [
  'blake2b',
  'blake2s',
  'md5',
  'sha1',
  'sha224',
  'sha256',
  'sha384',
  'sha3_224',
  'sha3_256',
  'sha3_384',
  'sha3_512',
  'sha512',
  'shake_128',
  'shake_256',
] as const;

export interface Checksum {
  checksum: string;
  type: string;
}

export interface AccessUrl {
  url: string;
  headers?: Record<string, string>;
}

export interface AccessMethod {
  type: string;
  access_id?: string;
  access_url?: AccessUrl;
  region?: string;
}

export interface ContentsObject {
  name: string;
  id?: string;
  drs_uri?: string[];
  contents?: ContentsObject[];
}

/** A DRS object as shown. */
export interface DrsObject {
  id: string;
  self_uri: string;
  size: number;
  created_time: string;
  checksums: Checksum[];
  name?: string;
  updated_time?: string;
  version?: string;
  mime_type?: string;
  access_methods?: AccessMethod[];
  contents?: ContentsObject[];
  description?: string;
  aliases?: string[];
  types?: string[];
}

/** Fields a site writes (`POST /objects`, `PATCH /objects/{id}`), in the order objects show them. */
const WRITABLE_FIELDS = [
  'name',
  'size',
  'created_time',
  'updated_time',
  'version',
  'mime_type',
  'checksums',
  'access_methods',
  'contents',
  'description',
  'aliases',
] as const;

/** Fields every object has, which a PATCH may change but not remove. */
export const REQUIRED_FIELDS = new Set(['size', 'checksums', 'created_time']);

/** Every field an object shows, in order; anything else a record holds stays inside. */
export const SHOWN_FIELDS = ['id', 'name', 'self_uri', ...WRITABLE_FIELDS.slice(1), 'types'] as const;

/**
 * A date-time as the original's pydantic reads it: ISO 8601, with or without a zone (a naive
 * time is UTC, as MongoDB stores it); kept as an ISO string in UTC.
 */
export function normalizedTime(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new Unprocessable(`${field} must be a date-time string`);
  const zoned = /(?:[zZ]|[+-]\d\d:?\d\d)$/.test(value) || !value.includes('T') ? value : `${value}Z`;
  const time = new Date(zoned);
  if (!/^\d{4}-\d\d-\d\d/.test(value) || Number.isNaN(time.getTime())) {
    throw new Unprocessable(`${field} is not an ISO 8601 date-time: ${JSON.stringify(value)}`);
  }
  return time.toISOString();
}

/** The rules the contract's schema cannot say: an access method names an id or a URL; a blob has access methods. */
export function checkObjectShape(record: Doc): void {
  const checksums = record.checksums as Checksum[] | undefined;
  if (!Array.isArray(checksums) || checksums.length === 0) {
    throw new Unprocessable('checksums: at least one checksum is required');
  }
  const methods = record.access_methods as AccessMethod[] | undefined;
  for (const [i, method] of (methods ?? []).entries()) {
    if (method.access_id === undefined && method.access_url === undefined) {
      throw new Unprocessable(
        `access_methods.${i}: at least one of access_url and access_id must be provided`,
      );
    }
  }
  if (record.contents === undefined && methods === undefined) {
    throw new Unprocessable('no contents means a single blob, which requires access_methods');
  }
  checkContents(record.contents as ContentsObject[] | undefined, 'contents');
}

function checkContents(contents: ContentsObject[] | undefined, where: string): void {
  for (const [i, item] of (contents ?? []).entries()) {
    if (item.contents === undefined && item.id === undefined) {
      throw new Unprocessable(`${where}.${i}: no contents means no further nesting, so id is required`);
    }
    checkContents(item.contents, `${where}.${i}.contents`);
  }
}

/** Drops nulls (the clients send `"aliases": null` for "not set") from a nested value. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v !== null && v !== undefined) out[key] = withoutNulls(v);
  }
  return out;
}

/** The writable fields of a request body, nulls dropped and times normalized; other fields ignored, as the original. */
export function writableFields(body: Record<string, unknown>): { set: Doc; unset: string[] } {
  const set: Record<string, unknown> = {};
  const unset: string[] = [];
  for (const field of WRITABLE_FIELDS) {
    if (!(field in body)) continue;
    const value = body[field];
    if (value === null || value === undefined) {
      unset.push(field);
      continue;
    }
    set[field] =
      field === 'created_time' || field === 'updated_time'
        ? normalizedTime(field, value)
        : withoutNulls(value);
  }
  return { set: set as Doc, unset };
}

/** Whether a record is one of the service's own stored objects (no site manages it). */
export function isServiceObject(record: Doc): boolean {
  return record._mgr_site === undefined;
}

/** The site that may change an object. */
export function managerOf(record: Doc): string {
  return typeof record._mgr_site === 'string' ? record._mgr_site : RUNTIME_SITE;
}
