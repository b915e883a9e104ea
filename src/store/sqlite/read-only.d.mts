import type Database from 'better-sqlite3';

/** A read-only connection to `file` for a thread of its own (read-only.mjs). */
export function openReadOnly(file: string, cacheKib: number): Database.Database;

/** The most of a store's file a connection maps (read-only.mjs). */
export declare const MMAP_BYTES: number;
