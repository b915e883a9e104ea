/**
 * Progress of a long job that counts records: a bar on a terminal (cli-progress), a line every few
 * seconds otherwise. The total is known (records counted by a check pass) or estimated from the
 * share of the input's bytes read so far; the rate and the time left come from the records done
 * since the start, and say `--` until there is something to go by.
 */
import fs from 'node:fs';
import { SingleBar, Presets } from 'cli-progress';

const LINE_EVERY_MS = 5000;

/** `1:02:03`, `2:03`, or `--` for a time that cannot be told yet. */
export function clock(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--';
  const s = Math.round(seconds);
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

/**
 * The uncompressed size of a file as read: its size, or for gzip the size its trailer records
 * (modulo 4 GiB, so raised by 4 GiB steps until it is at least the compressed size).
 */
export function uncompressedSize(file: string): number {
  const size = fs.statSync(file).size;
  if (!file.endsWith('.gz') || size < 18) return size;
  const fd = fs.openSync(file, 'r');
  try {
    const trailer = Buffer.alloc(4);
    fs.readSync(fd, trailer, 0, 4, size - 4);
    let isize = trailer.readUInt32LE(0);
    while (isize < size) isize += 2 ** 32;
    return isize;
  } finally {
    fs.closeSync(fd);
  }
}

export interface RecordProgressOptions {
  label: string;
  /** Records in all, when known (e.g. counted by a check pass). */
  total?: number;
  /** Uncompressed bytes in all, to estimate the total from the bytes read when `total` is unknown. */
  bytes?: number;
  stream?: NodeJS.WriteStream;
  now?: () => number;
}

export class RecordProgress {
  private readonly bar: SingleBar | undefined;
  private readonly stream: NodeJS.WriteStream;
  private readonly now: () => number;
  private readonly started: number;
  private lastLine: number;
  private records = 0;
  private total: number | undefined;

  constructor(private readonly options: RecordProgressOptions) {
    this.stream = options.stream ?? process.stderr;
    this.now = options.now ?? Date.now;
    this.started = this.lastLine = this.now();
    this.total = options.total;
    if (this.stream.isTTY) {
      this.bar = new SingleBar(
        {
          format: `${options.label} [{bar}] {percentage}% | {value}/{total} records | {rate}/s | ETA {left}`,
          stream: this.stream,
          hideCursor: true,
        },
        Presets.shades_classic,
      );
      this.bar.start(this.total ?? 0, 0, this.payload());
    }
  }

  /** Records per second since the start, or undefined before the first record. */
  rate(): number | undefined {
    const seconds = (this.now() - this.started) / 1000;
    return this.records > 0 && seconds > 0 ? this.records / seconds : undefined;
  }

  /** Seconds left at the current rate, or undefined while it cannot be told. */
  secondsLeft(): number | undefined {
    const rate = this.rate();
    if (rate === undefined || this.total === undefined) return undefined;
    return Math.max(0, this.total - this.records) / rate;
  }

  private payload() {
    const rate = this.rate();
    return {
      rate: rate === undefined ? '--' : Math.round(rate).toLocaleString('en-US'),
      left: clock(this.secondsLeft() ?? NaN),
    };
  }

  /** `records` done so far; `bytesRead` (uncompressed) estimates the total when it is not known. */
  update(records: number, bytesRead?: number): void {
    this.records = records;
    if (this.options.total === undefined && this.options.bytes && bytesRead && bytesRead > 0) {
      const share = Math.min(1, bytesRead / this.options.bytes);
      this.total = Math.max(records, Math.round(records / share));
    }
    if (this.bar) {
      if (this.total !== undefined) this.bar.setTotal(this.total);
      this.bar.update(records, this.payload());
      return;
    }
    if (this.now() - this.lastLine >= LINE_EVERY_MS) {
      this.lastLine = this.now();
      this.stream.write(`${this.line()}\n`);
    }
  }

  /** The progress as one line: `label: 1,200 of 5,000 records (24%), 300 records/s, 0:13 left`. */
  line(): string {
    const rate = this.rate();
    const of = this.total === undefined ? '' : ` of ${this.total.toLocaleString('en-US')}`;
    const share = this.total ? ` (${Math.floor((100 * this.records) / this.total)}%)` : '';
    const speed = rate === undefined ? '' : `, ${Math.round(rate).toLocaleString('en-US')} records/s`;
    const left = this.secondsLeft();
    return `${this.options.label}: ${this.records.toLocaleString('en-US')}${of} records${share}${speed}${left === undefined ? '' : `, ${clock(left)} left`}`;
  }

  /** Writes `text` (a line) without tearing the bar. */
  note(text: string): void {
    if (!this.bar) {
      this.stream.write(text);
      return;
    }
    this.bar.stop();
    this.stream.write(text);
    this.bar.start(this.total ?? 0, this.records, this.payload());
  }

  stop(): void {
    this.bar?.stop();
  }
}
