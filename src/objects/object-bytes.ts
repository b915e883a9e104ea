/**
 * Where the bytes of stored objects live, addressed by their sha256: a small port with two
 * adapters, files under `<DATA_DIR>/objects/` for the embedded store (`disk-bytes.ts`) and a
 * GridFS bucket for MongoDB (`gridfs-bytes.ts`). Bytes are written before the object's record
 * and never inside its transaction, so bytes without a record may exist (a submission that died
 * between the two); they are harmless, and `sweep` removes old ones.
 */

export interface ObjectBytes {
  /** Stores `content` under `sha256` (its digest) durably; a no-op when those bytes are already there. */
  put(sha256: string, content: Buffer): Promise<void>;
  /** The bytes stored under `sha256`, or null. */
  get(sha256: string): Promise<Buffer | null>;
  /**
   * Removes bytes older than `olderThanMs` whose digest `isReferenced` denies (and leftovers of
   * writes that never finished); returns how many it removed. Young bytes are kept because a
   * submission in another process may be about to commit the record that refers to them.
   */
  sweep(isReferenced: (sha256: string) => boolean, olderThanMs: number): Promise<number>;
}
