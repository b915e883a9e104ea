/**
 * Reading the store file into the OS cache at start-up (src/store/sqlite/prewarm.ts): the whole
 * file when reads come from disk, a few samples when they come at memory speed, nothing when the
 * file is larger than the budget, and a stop when asked. The clock is the test's: a read "takes"
 * what the clock moves between its two readings.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableMemory, cgroupRoom, prewarmFile } from '../../src/store/sqlite/prewarm.ts';

const CHUNK = 256 * 1024;
let dir: string;
let file: string;
let small: string;
const SIZE = 12 * CHUNK + 1000;

/** A clock that moves `step` ms each time it is read. */
function clock(step: number): () => number {
  let t = 0;
  return () => (t += step);
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-prewarm-'));
  file = path.join(dir, 'nmdc.sqlite');
  fs.writeFileSync(file, Buffer.alloc(SIZE, 7));
  small = path.join(dir, 'small.sqlite');
  fs.writeFileSync(small, Buffer.alloc(3 * CHUNK, 1));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('prewarmFile', () => {
  it('reads the whole file, in order, when the sampled reads are slow (from disk)', async () => {
    const reading: number[] = [];
    const r = await prewarmFile(file, {
      chunkBytes: CHUNK,
      budgetBytes: SIZE,
      now: clock(5),
      onReading: (bytes) => reading.push(bytes),
    });
    expect(r.outcome).toBe('read');
    expect(r.fileBytes).toBe(SIZE);
    // One sample (slow: no need for more), then every byte.
    expect(r.bytesRead).toBe(CHUNK + SIZE);
    expect(reading).toEqual([SIZE]);
    expect(r.ms).toBeGreaterThan(0);
  });

  it('stops after eight samples spread over the file when they come at memory speed (it is cached)', async () => {
    const reading: number[] = [];
    const r = await prewarmFile(file, {
      chunkBytes: CHUNK,
      budgetBytes: SIZE,
      now: clock(0.1),
      onReading: (bytes) => reading.push(bytes),
    });
    expect(r).toMatchObject({ outcome: 'cached', fileBytes: SIZE, bytesRead: 8 * CHUNK });
    expect(reading).toEqual([]);
  });

  it('reads the whole file when only the last sample is slow (part of it is cached)', async () => {
    // Each read takes two readings of the clock (and one more before the first): the eighth is slow.
    let calls = 0;
    const now = () => (++calls > 15 ? calls * 5 : 0);
    const r = await prewarmFile(file, { chunkBytes: CHUNK, budgetBytes: SIZE, now });
    expect(r).toMatchObject({ outcome: 'read', bytesRead: 8 * CHUNK + SIZE });
  });

  it('reads a file of no more chunks than it samples whole, however fast', async () => {
    const r = await prewarmFile(small, { chunkBytes: CHUNK, now: clock(0) });
    expect(r).toMatchObject({ outcome: 'read', fileBytes: 3 * CHUNK, bytesRead: 3 * CHUNK });
  });

  it('reads nothing of a file larger than the budget', async () => {
    const r = await prewarmFile(file, { chunkBytes: CHUNK, budgetBytes: SIZE - 1, now: clock(5) });
    expect(r).toMatchObject({ outcome: 'too-large', fileBytes: SIZE, bytesRead: 0 });
  });

  it('stops when its signal is aborted', async () => {
    const stop = new AbortController();
    const r = await prewarmFile(file, {
      chunkBytes: CHUNK,
      budgetBytes: SIZE,
      now: clock(5),
      signal: stop.signal,
      onReading: () => stop.abort(),
    });
    expect(r).toMatchObject({ outcome: 'stopped', bytesRead: CHUNK });
  });

  it('says a missing file is missing', async () => {
    const r = await prewarmFile(path.join(dir, 'none.sqlite'));
    expect(r).toMatchObject({ outcome: 'missing', bytesRead: 0 });
  });

  it('takes its default budget from the memory the OS has available', () => {
    expect(availableMemory()).toBeGreaterThan(0);
    expect(availableMemory()).toBeLessThanOrEqual(os.totalmem());
  });
});

describe('the memory a prewarm may fill', () => {
  /** A root with /proc and /sys files as given. */
  function root(files: Record<string, string>): string {
    const r = fs.mkdtempSync(path.join(dir, 'root-'));
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(r, name)), { recursive: true });
      fs.writeFileSync(path.join(r, name), text);
    }
    return r;
  }
  const meminfo = 'MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n';

  it("is the room under a cgroup v2 limit, or none when it is 'max'", () => {
    const limited = root({
      'proc/self/cgroup': '0::/app.slice/service\n',
      'sys/fs/cgroup/app.slice/service/memory.max': '1073741824\n',
      'sys/fs/cgroup/app.slice/service/memory.current': '73741824\n',
      'proc/meminfo': meminfo,
    });
    expect(cgroupRoom(limited)).toBe(1_000_000_000);
    expect(availableMemory(limited)).toBe(1_000_000_000);
    const unlimited = root({
      'proc/self/cgroup': '0::/\n',
      'sys/fs/cgroup/memory.max': 'max\n',
      'proc/meminfo': meminfo,
    });
    expect(cgroupRoom(unlimited)).toBeUndefined();
    expect(availableMemory(unlimited)).toBe(20_000_000 * 1024);
  });

  it("is the room under a cgroup v1 memory limit, or none when it is v1's 'unlimited'", () => {
    const files = (limit: string) =>
      root({
        'proc/self/cgroup': '5:devices:/\n4:memory:/docker/abc\n0::/\n',
        'sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes': limit,
        'sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes': '500\n',
        'proc/meminfo': meminfo,
      });
    expect(cgroupRoom(files('2500\n'))).toBe(2000);
    expect(availableMemory(files('2500\n'))).toBe(2000);
    expect(cgroupRoom(files('9223372036854771712\n'))).toBeUndefined();
    expect(availableMemory(files('9223372036854771712\n'))).toBe(20_000_000 * 1024);
  });

  it('is the available memory where there is no cgroup file', () => {
    const bare = root({ 'proc/meminfo': meminfo });
    expect(cgroupRoom(bare)).toBeUndefined();
    expect(availableMemory(bare)).toBe(20_000_000 * 1024);
  });
});
