/**
 * Object bytes in MongoDB's GridFS (the default `fs` bucket, as the original keeps submitted
 * JSON), for the MongoDB store. Each upload is a GridFS file named by the sha256 of its bytes,
 * with `metadata.sha256` marking it as content-addressed. GridFS writes the file document only
 * after every chunk, so a file that can be found is complete; an upload cut short leaves chunks
 * without a file, which `sweep` removes once they are old. Two processes storing the same bytes
 * at once may leave two identical files; either serves.
 */
import { GridFSBucket, ObjectId, type Db } from 'mongodb';
import type { ObjectBytes } from './object-bytes.ts';

export const GRIDFS_BUCKET = 'fs';

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

  async put(sha256: string, content: Buffer): Promise<void> {
    const existing = await this.newest(sha256);
    if (existing && existing.length === content.length) return;
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
    let removed = 0;
    const files = this.bucket.find(
      { 'metadata.sha256': { $exists: true }, uploadDate: { $lt: cutoff } },
      { projection: { _id: 1, filename: 1 } },
    );
    for await (const file of files) {
      if (isReferenced(file.filename)) continue;
      await this.bucket.delete(file._id);
      removed++;
    }
    // Chunks of uploads that never wrote their file document (the upload's id says when it began).
    const chunks = this.db.collection(`${GRIDFS_BUCKET}.chunks`);
    const started = await chunks.distinct('files_id', {
      files_id: { $lt: ObjectId.createFromTime(Math.floor(cutoff.getTime() / 1000)) },
    });
    for (const filesId of started) {
      if (
        await this.db
          .collection(`${GRIDFS_BUCKET}.files`)
          .findOne({ _id: filesId }, { projection: { _id: 1 } })
      )
        continue;
      await chunks.deleteMany({ files_id: filesId });
      removed++;
    }
    return removed;
  }
}
