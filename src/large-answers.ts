/**
 * Pages of many records, read and answered a few at a time. A page of 10^5 biosamples holds about
 * 400 MiB of this process's heap from its reading until its last byte is written (the records,
 * then their JSON text), and the heap is at most about 4 GiB: ten such pages at once left 3.5 GiB
 * in use, and a few more end the process. A page asking for more than LARGE_ANSWER_RECORDS
 * records takes one of `slots` while it is read and answered; others wait their turn, and beyond
 * `queue` waiting the answer is 503 with `Retry-After`. Smaller pages never wait.
 */
import { ServerBusy } from './errors.ts';

/** Records a page may ask for without taking a slot. */
export const LARGE_ANSWER_RECORDS = 10_000;
/** Large pages read and answered at once, per process. */
export const LARGE_ANSWER_SLOTS = 2;
/** Large pages that may wait for a slot; beyond, 503. */
export const LARGE_ANSWER_QUEUE = 16;
/** Seconds a refused large page is told to wait. */
const RETRY_AFTER_SECONDS = 5;

/** Whether a page of `records` (below 1: every match, as the listings read it) takes a slot. */
export const isLargePage = (records: number): boolean => records < 1 || records > LARGE_ANSWER_RECORDS;

export class LargeAnswers {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly slots = LARGE_ANSWER_SLOTS,
    readonly queue = LARGE_ANSWER_QUEUE,
  ) {}

  /** Runs `answer` (reading a large page and writing it) in a slot, waiting for one if needed. */
  async run<T>(answer: () => Promise<T>): Promise<T> {
    if (this.running < this.slots) this.running++;
    else if (this.waiting.length >= this.queue)
      throw new ServerBusy(
        `${this.slots} pages of more than ${LARGE_ANSWER_RECORDS} records are being answered and ` +
          `${this.queue} wait: send this one again later, or ask for pages of at most ` +
          `${LARGE_ANSWER_RECORDS} records`,
        RETRY_AFTER_SECONDS,
      );
    // A slot is handed over by the answer that ends (running stays as it is).
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await answer();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Pages answered and waiting now (metrics, tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}
