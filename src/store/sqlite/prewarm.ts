/**
 * The embedded store's file read into the OS page cache as the service starts, in the background
 * (as PostgreSQL's pg_prewarm or Elasticsearch's store preload do). The OS keeps a file's pages
 * across restarts of the service, but not across a reboot or a move to a new machine: there each
 * page a request first touches is read from disk on its own, a few ms apiece (a first exact count
 * of 83,181 matches at 10^6 biosamples: 1-2 s, against 48 ms cached), while the file read in order
 * comes at the disk's full rate. Nothing waits for it: requests are served meanwhile, and read what
 * they need as before.
 *
 * A file larger than half the memory the OS says is available (within a container's limit) is
 * left alone (it would push out what is cached already), and so is one that is cached: a few
 * reads spread over the file come back at memory speed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Bytes read at a time: large enough for the disk's rate, small enough for requests' reads to come between. */
const CHUNK_BYTES = 1 << 20;
/** Reads spread over the file that tell whether it is cached. */
const SAMPLES = 8;
/** A read of a chunk faster than this (ms) came from memory (about 500 MB/s and up). */
const CACHED_MS = 2;

export interface PrewarmOptions {
  /** Bytes read at a time (CHUNK_BYTES). */
  chunkBytes?: number;
  /** The largest file read (default: half the memory available). */
  budgetBytes?: number;
  /** Stops the reading (the service is stopping). */
  signal?: AbortSignal;
  /** Called as the whole file starts to be read (it is neither cached nor too large). */
  onReading?: (fileBytes: number) => void;
  /** A clock in ms (tests). */
  now?: () => number;
}

export interface PrewarmResult {
  /** What happened: read whole, found cached, too large for the budget, stopped, or no such file. */
  outcome: 'read' | 'cached' | 'too-large' | 'stopped' | 'missing';
  fileBytes: number;
  bytesRead: number;
  ms: number;
}

/** The first line of a file as a number of bytes, or undefined (missing, `max`, or not a number). */
function bytesIn(file: string): number | undefined {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isSafeInteger(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The room left under the memory limit of the process's control group (a container's limit), or
 * undefined when it has none: cgroup v2's `memory.max` less `memory.current`, else v1's
 * `memory.limit_in_bytes` less `memory.usage_in_bytes`. `root` is where /proc and /sys are (tests).
 */
export function cgroupRoom(root = '/'): number | undefined {
  let groups: string;
  try {
    groups = fs.readFileSync(path.join(root, 'proc/self/cgroup'), 'utf8');
  } catch {
    return undefined;
  }
  for (const line of groups.split('\n')) {
    const [, controllers, group] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (group === undefined) continue;
    const [dir, limitFile, usageFile] =
      controllers === ''
        ? [path.join(root, 'sys/fs/cgroup', group), 'memory.max', 'memory.current']
        : controllers!.split(',').includes('memory')
          ? [path.join(root, 'sys/fs/cgroup/memory', group), 'memory.limit_in_bytes', 'memory.usage_in_bytes']
          : [];
    if (!dir) continue;
    const limit = bytesIn(path.join(dir, limitFile!));
    // v1 writes "no limit" as the largest page-aligned 64-bit number.
    if (limit === undefined || limit >= 2 ** 52) continue;
    return Math.max(0, limit - (bytesIn(path.join(dir, usageFile!)) ?? 0));
  }
  return undefined;
}

/**
 * The memory the OS can give without swapping (MemAvailable, else the free memory), and no more
 * than the room under the process's control group's limit.
 */
export function availableMemory(root = '/'): number {
  let available = os.freemem();
  try {
    const line = /^MemAvailable:\s+(\d+) kB$/m.exec(fs.readFileSync(path.join(root, 'proc/meminfo'), 'utf8'));
    if (line) available = Number(line[1]) * 1024;
  } catch {
    // Not Linux: the free memory.
  }
  return Math.min(available, cgroupRoom(root) ?? Infinity);
}

/** Reads `file` into the OS page cache, unless it is cached already or too large (see the module comment). */
export async function prewarmFile(file: string, options: PrewarmOptions = {}): Promise<PrewarmResult> {
  const now = options.now ?? (() => performance.now());
  const chunk = Math.max(4096, options.chunkBytes ?? CHUNK_BYTES);
  const started = now();
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return { outcome: 'missing', fileBytes: 0, bytesRead: 0, ms: 0 };
    throw err;
  }
  let bytesRead = 0;
  const result = (outcome: PrewarmResult['outcome'], fileBytes: number): PrewarmResult => ({
    outcome,
    fileBytes,
    bytesRead,
    ms: now() - started,
  });
  try {
    const fileBytes = (await handle.stat()).size;
    if (fileBytes > (options.budgetBytes ?? availableMemory() / 2)) return result('too-large', fileBytes);
    const buffer = Buffer.allocUnsafe(chunk);
    /** Reads the chunk at `position`; how long it took, ms. */
    const readAt = async (position: number): Promise<number> => {
      const t = now();
      const { bytesRead: n } = await handle.read(buffer, 0, chunk, position);
      bytesRead += n;
      return now() - t;
    };
    // A few chunks spread over the file: all at memory speed means the file is cached.
    const chunks = Math.ceil(fileBytes / chunk);
    if (chunks > SAMPLES) {
      let cached = true;
      for (let i = 0; i < SAMPLES && cached; i++) {
        if (options.signal?.aborted) return result('stopped', fileBytes);
        cached = (await readAt(Math.floor((i * chunks) / SAMPLES) * chunk)) < CACHED_MS;
      }
      if (cached) return result('cached', fileBytes);
    }
    options.onReading?.(fileBytes);
    for (let position = 0; position < fileBytes; position += chunk) {
      if (options.signal?.aborted) return result('stopped', fileBytes);
      await readAt(position);
    }
    return result('read', fileBytes);
  } finally {
    await handle.close();
  }
}
