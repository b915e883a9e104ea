/**
 * Object bytes as files under `<DATA_DIR>/objects/`, for the embedded store: `sha256/<ab>/<digest>`
 * holds the bytes whose sha256 is `<digest>`. A write goes to `tmp/` first, is flushed to disk
 * (fsync), then renamed into place and the folder flushed, so a file under `sha256/` is always
 * complete, even after a crash or SIGKILL mid-write.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/private-files.ts';
import type { ObjectBytes } from './object-bytes.ts';

const DIGEST = /^[0-9a-f]{64}$/;

export class DiskBytes implements ObjectBytes {
  private readonly finalDir: string;
  private readonly tmpDir: string;

  constructor(root: string) {
    this.finalDir = path.join(root, 'sha256');
    this.tmpDir = path.join(root, 'tmp');
  }

  private fileOf(sha256: string): string {
    if (!DIGEST.test(sha256)) throw new Error(`not a sha256 digest: ${sha256}`);
    return path.join(this.finalDir, sha256.slice(0, 2), sha256);
  }

  async put(sha256: string, content: Buffer): Promise<void> {
    const file = this.fileOf(sha256);
    const existing = await fs.stat(file).catch(() => null);
    if (existing && existing.size === content.length) {
      // Refresh its age so a sweep in another process keeps it until our record is committed.
      const now = new Date();
      await fs.utimes(file, now, now);
      return;
    }
    // Owner-only, as the rest of DATA_DIR: submitted metadata may be embargoed.
    await fs.mkdir(this.tmpDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    await fs.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
    const tmp = path.join(this.tmpDir, `${sha256}.${randomUUID()}`);
    const handle = await fs.open(tmp, 'wx', PRIVATE_FILE_MODE);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fs.rename(tmp, file);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    await syncDir(path.dirname(file));
  }

  async get(sha256: string): Promise<Buffer | null> {
    try {
      return await fs.readFile(this.fileOf(sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async sweep(isReferenced: (sha256: string) => boolean, olderThanMs: number): Promise<number> {
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    const removeIfOld = async (file: string, keep: boolean) => {
      const stat = await fs.stat(file).catch(() => null);
      if (!stat || keep || stat.mtimeMs > cutoff) return;
      await fs.rm(file, { force: true });
      removed++;
    };
    for (const name of await listDir(this.tmpDir)) await removeIfOld(path.join(this.tmpDir, name), false);
    for (const shard of await listDir(this.finalDir)) {
      const dir = path.join(this.finalDir, shard);
      for (const name of await listDir(dir)) {
        await removeIfOld(path.join(dir, name), DIGEST.test(name) && isReferenced(name));
      }
    }
    return removed;
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Makes a rename durable: the folder's entry is flushed too. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
