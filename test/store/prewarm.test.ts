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
import { availableMemory, prewarmFile } from '../../src/store/sqlite/prewarm.ts';

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
