/**
 * Object bytes in MongoDB's GridFS (the default `fs` bucket, as the original keeps submitted
 * JSON), for the MongoDB store. Each upload is a GridFS file named by the sha256 of its bytes,
 * with `metadata.sha256` marking it as content-addressed. GridFS writes the file document only
 * after every chunk, so a file that can be found is complete; an upload cut short leaves chunks
 * without a file, which `sweep` removes once they are old. Two processes storing the same bytes
 * at once may leave two identical files; either serves.
 *
 * Storing bytes that are already there touches their file (`metadata.touchedAt`), and the sweep
 * removes a file only while it is still untouched (one conditional delete): bytes a submission
 * is about to commit a record for are never swept from under it, even when an earlier upload of
 * the same bytes was old and unreferenced. If the sweep removed them first, the touch finds
 * nothing and the bytes are uploaded again.
 */
import { GridFSBucket, ObjectId, type Db, type GridFSFile } from 'mongodb';
import type { ObjectBytes } from './object-bytes.ts';

export const GRIDFS_BUCKET = 'fs';
/** Upload ids one round of the sweep looks up (and chunks it reads per batch). */
const SWEEP_BATCH = 1000;

export class GridFsBytes implements ObjectBytes {
  private readonly bucket: GridFSBucket;

  constructor(private readonly db: Db) {
    this.bucket = new GridFSBucket(db, { bucketName: GRIDFS_BUCKET });
  }

  private async newest(sha256: string) {
    const [file] = await this.bucket
      .find({ filename: sha256, 'metadata.sha256': sha256 }, { sort: { uploadDate: -1 }, limit: 1 })
      .toArray();
    return file ?? null;
  }

  private get files() {
    return this.db.collection<GridFSFile>(`${GRIDFS_BUCKET}.files`);
  }

  private get chunks() {
    return this.db.collection<{ files_id: ObjectId; n: number }>(`${GRIDFS_BUCKET}.chunks`);
  }

  async put(sha256: string, content: Buffer): Promise<void> {
    const existing = await this.newest(sha256);
    if (existing && existing.length === content.length) {
      const touched = await this.files.updateOne(
        { _id: existing._id },
        { $set: { 'metadata.touchedAt': new Date() } },
      );
      if (touched.matchedCount === 1) return;
    }
    const upload = this.bucket.openUploadStream(sha256, {
      metadata: { sha256, contentType: 'application/octet-stream' },
    });
    await new Promise<void>((resolve, reject) => {
      upload.once('error', reject);
      upload.once('finish', () => resolve());
      upload.end(content);
    });
  }

  async get(sha256: string): Promise<Buffer | null> {
    const file = await this.newest(sha256);
    if (!file) return null;
    const parts: Buffer[] = [];
    for await (const part of this.bucket.openDownloadStream(file._id)) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  async sweep(isReferenced: (sha256: string) => boolean, olderThanMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - olderThanMs);
    const untouched = {
      $or: [{ 'metadata.touchedAt': { $exists: false } }, { 'metadata.touchedAt': { $lt: cutoff } }],
    };
    let removed = 0;
    const files = this.files.find(
      { 'metadata.sha256': { $exists: true }, uploadDate: { $lt: cutoff }, ...untouched },
      { projection: { _id: 1, filename: 1 } },
    );
    for await (const file of files) {
      if (isReferenced(file.filename)) continue;
      // Still untouched: a put of the same bytes since then keeps them.
      const { deletedCount } = await this.files.deleteOne({ _id: file._id, ...untouched });
      if (deletedCount === 0) continue;
      await this.chunks.deleteMany({ files_id: file._id });
      removed++;
    }
    // Chunks of uploads that never wrote their file document (the upload's id says when it
    // began), found by their first chunk, which every upload writes first: a cursor read in
    // batches, never one reply holding every upload's id.
    const started = this.chunks.find(
      { files_id: { $lt: ObjectId.createFromTime(Math.floor(cutoff.getTime() / 1000)) }, n: 0 },
      { projection: { _id: 0, files_id: 1 }, batchSize: SWEEP_BATCH },
    );
    let batch: ObjectId[] = [];
    const removeOrphans = async () => {
      const complete = await this.files.find({ _id: { $in: batch } }, { projection: { _id: 1 } }).toArray();
      const kept = new Set(complete.map((f) => f._id.toHexString()));
      const orphans = batch.filter((id) => !kept.has(id.toHexString()));
      if (orphans.length > 0) await this.chunks.deleteMany({ files_id: { $in: orphans } });
      removed += orphans.length;
      batch = [];
    };
    for await (const chunk of started) {
      batch.push(chunk.files_id);
      if (batch.length >= SWEEP_BATCH) await removeOrphans();
    }
    if (batch.length > 0) await removeOrphans();
    return removed;
  }
}
