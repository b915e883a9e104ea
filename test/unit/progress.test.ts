/**
 * The progress of long record jobs (`npm run load`): counts records against a known or estimated
 * total, with a rate and a time left that are numbers or `--`, never NaN or Infinity.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { clock, RecordProgress, uncompressedSize } from '../../src/cli/progress.ts';

/** A stream that keeps what is written; a terminal when `tty`. */
function sink(tty: boolean) {
  const written: string[] = [];
  const stream = {
    isTTY: tty,
    columns: 120,
    write: (text: string) => (written.push(text), true),
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
    on: () => stream,
    removeListener: () => stream,
  };
  return { stream: stream as unknown as NodeJS.WriteStream, written };
}

describe('clock', () => {
  it('tells seconds as m:ss or h:mm:ss, and -- for what cannot be told', () => {
    expect([clock(0), clock(75), clock(3725), clock(Infinity), clock(NaN), clock(-1)]).toEqual([
      '0:00',
      '1:15',
      '1:02:05',
      '--',
      '--',
      '--',
    ]);
  });
});

describe('RecordProgress', () => {
  it('counts records against the known total, with a rate and the time left', () => {
    let now = 0;
    const { stream, written } = sink(false);
    const progress = new RecordProgress({ label: 'data/x.json.gz', total: 10_000, stream, now: () => now });
    expect(progress.line()).toBe('data/x.json.gz: 0 of 10,000 records (0%)');
    now = 2_000;
    progress.update(1_000);
    expect(written).toEqual([]); // a line every 5 s, not on every batch
    now = 5_000;
    progress.update(2_500);
    expect(written).toEqual(['data/x.json.gz: 2,500 of 10,000 records (25%), 500 records/s, 0:15 left\n']);
  });

  it('estimates the total from the share of the bytes read when it is not known', () => {
    let now = 0;
    const { stream } = sink(false);
    const progress = new RecordProgress({ label: 'f', bytes: 1_000_000, stream, now: () => now });
    expect(progress.line()).toBe('f: 0 records');
    now = 1_000;
    progress.update(300, 250_000);
    expect(progress.line()).toBe('f: 300 of 1,200 records (25%), 300 records/s, 0:03 left');
  });

  it('draws a bar of records on a terminal, with no NaN or Infinity while nothing is done yet', () => {
    let now = 0;
    const { stream, written } = sink(true);
    const progress = new RecordProgress({ label: 'f', total: 200, stream, now: () => now });
    now = 4_000;
    progress.update(100);
    progress.stop();
    const text = written.join('');
    expect(text).toContain('0/200 records | --/s | ETA --');
    expect(text).toContain('50% | 100/200 records | 25/s | ETA 0:04');
    expect(text).not.toMatch(/NaN|Infinity|NF/);
  });
});

describe('uncompressedSize', () => {
  it('reads a gzip file size from its trailer, and a plain file size as it is', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-progress-'));
    try {
      const text = '{"biosample_set": []}'.repeat(10_000);
      fs.writeFileSync(path.join(dir, 'a.json.gz'), gzipSync(text));
      fs.writeFileSync(path.join(dir, 'a.json'), text);
      expect(uncompressedSize(path.join(dir, 'a.json.gz'))).toBe(text.length);
      expect(uncompressedSize(path.join(dir, 'a.json'))).toBe(text.length);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
