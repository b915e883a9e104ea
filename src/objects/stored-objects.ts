/**
 * Stored objects: payloads the service keeps as they were received (submitted metadata JSON,
 * changesheets), each described by a record in the `objects` collection shaped like the
 * original's DRS object (id, name, size, created time, MIME type, description, sha256 checksum).
 * The bytes are content-addressed by sha256 (`object-bytes.ts`): files under `<DATA_DIR>/objects/`
 * on the embedded store, GridFS on MongoDB. `prepare` writes the bytes and hands back the record
 * without storing it, so the caller commits it in the same atomic write as whatever it applies:
 * a record in `objects` always has its bytes, and bytes without a record are swept.
 */
import path from 'node:path';
import { createHash } from 'node:crypto';
import type { DocumentStore, Doc } from '../store/port.ts';
import type { MongoDocumentStore } from '../store/mongo/document-store.ts';
import type { ObjectBytes } from './object-bytes.ts';
import { DiskBytes } from './disk-bytes.ts';
import { randomCrockford } from './system-ids.ts';

/** DocumentStore collection of object records. */
export const OBJECTS = 'objects';

/** Bytes without a record are removed by a sweep only when older than this (a commit may be on its way). */
export const UNREFERENCED_BYTES_KEPT_MS = 60 * 60 * 1000;

export interface StoredObject {
  id: string;
  name?: string;
  size: number;
  created_time: string;
  mime_type: string;
  description: string;
  checksums: Array<{ type: 'sha256'; checksum: string }>;
  types?: string[];
  created_by: string;
}

export interface PrepareInput {
  content: Buffer;
  name?: string;
  mimeType: string;
  description: string;
  createdBy: string;
  types?: string[];
}

/** Object ids as the original's (`gfs0` shoulder, DRS id characters only). */
export function mintObjectId(): string {
  return `gfs0${randomCrockford(12)}`;
}

/** Bytes hashed per turn of the event loop (a submitted payload may be hundreds of MB). */
const HASH_SLICE = 8 * 1024 * 1024;

/** The sha256 of `content` (hex), a slice per turn of the event loop. */
async function sha256InTurns(content: Buffer): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; ; at += HASH_SLICE) {
    hash.update(content.subarray(at, at + HASH_SLICE));
    if (at + HASH_SLICE >= content.length) return hash.digest('hex');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export function sha256Of(object: StoredObject): string | undefined {
  return object.checksums.find((c) => c.type === 'sha256')?.checksum;
}

export class StoredObjects {
  constructor(
    private readonly store: DocumentStore,
    private readonly bytes: ObjectBytes,
  ) {}

  /**
   * Writes the bytes (durably) and returns the object's record, NOT yet stored: the caller writes
   * it (collection `OBJECTS`) in the same atomic write as the records it applies.
   */
  async prepare(input: PrepareInput): Promise<StoredObject> {
    const checksum = await sha256InTurns(input.content);
    await this.bytes.put(checksum, input.content);
    const id = mintObjectId();
    const object: StoredObject = {
      id,
      // As the original: an object without a file name is named by its id.
      name: input.name ?? id,
      size: input.content.length,
      created_time: new Date().toISOString(),
      mime_type: input.mimeType,
      description: input.description,
      checksums: [{ type: 'sha256', checksum }],
      created_by: input.createdBy,
    };
    if (input.types && input.types.length > 0) object.types = [...input.types];
    return object;
  }

  async get(id: string): Promise<StoredObject | null> {
    return (await this.store.getById(OBJECTS, id)) as unknown as StoredObject | null;
  }

  /** The object's bytes; null when there is no such object. */
  async read(id: string): Promise<Buffer | null> {
    const object = await this.get(id);
    const checksum = object && sha256Of(object);
    if (!checksum) return null;
    return this.bytes.get(checksum);
  }

  /** Removes bytes no object record refers to (older than `olderThanMs`); returns how many. */
  async sweep(olderThanMs: number = UNREFERENCED_BYTES_KEPT_MS): Promise<number> {
    const referenced = new Set<string>();
    for await (const batch of this.store.scan(OBJECTS, 1000)) {
      for (const doc of batch) {
        const checksum = sha256Of(doc as unknown as StoredObject);
        if (checksum) referenced.add(checksum);
      }
    }
    return this.bytes.sweep((sha) => referenced.has(sha), olderThanMs);
  }
}

/** The bytes adapter for the store in use: GridFS beside MongoDB, files under DATA_DIR otherwise. */
export async function objectBytesFor(dataDir: string, store: DocumentStore): Promise<ObjectBytes> {
  if (store.engine === 'mongo') {
    const { GridFsBytes } = await import('./gridfs-bytes.ts');
    return new GridFsBytes((store as unknown as MongoDocumentStore).database);
  }
  return new DiskBytes(path.join(dataDir, 'objects'));
}

/**
 * The service's stored objects, after sweeping bytes left by submissions that died before
 * committing (a sweep that fails is reported and does not stop start-up).
 */
export async function openStoredObjects(
  dataDir: string,
  store: DocumentStore,
  onSweepError: (err: unknown) => void = () => undefined,
): Promise<StoredObjects> {
  const objects = new StoredObjects(store, await objectBytesFor(dataDir, store));
  await objects.sweep().catch(onSweepError);
  return objects;
}

/** A record as the store keeps it. */
export function objectRecord(object: StoredObject): Doc {
  return object as unknown as Doc;
}
