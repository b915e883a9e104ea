/**
 * Prepares batches of records given as JSON text on worker threads, taking turns. The threads
 * start on first use and hold the process open only while a batch is under way. The main thread
 * of a rebuild is busy for about half of each batch, so there is one worker per core (up to four)
 * rather than one in all. The same threads run the index's long reads (`query`) on their own
 * connections.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { joinTexts, type JoinedTexts } from '../../src/store/sqlite/joined-texts.ts';
import type { PreparedRecords } from '../../src/store/sqlite/prepared-records.ts';
import type { PreparedBatch } from './prepared-batch.ts';

/** A batch prepared, with the store's records when asked for (none: a text is not a record). */
export interface Prepared {
  batch: PreparedBatch;
  records?: PreparedRecords;
}

type Reply =
  | ({ id: number; error?: undefined } & Prepared)
  | { id: number; rows: unknown[][]; error?: undefined }
  | { id: number; error: string };

const WORKERS = Math.max(1, Math.min(4, os.availableParallelism()));

interface Waiting {
  resolve(answer: Prepared | unknown[][]): void;
  reject(e: Error): void;
  /** What was asked, for an error's message. */
  what: string;
}

export class WorkerPreparer {
  private readonly workers: Array<{ worker: Worker; waiting: Map<number, Waiting> } | null> =
    Array(WORKERS).fill(null);
  private next = 0;

  /**
   * @param file the index's database file, whose known strings the workers look up (none: in memory).
   * @param cacheKib page cache of each worker's connection to it.
   */
  constructor(
    private readonly file: string | undefined,
    private readonly cacheKib: number,
  ) {}

  /** True when `query` can run: the index is in a file the threads can open. */
  get queries(): boolean {
    return this.file !== undefined;
  }

  /** The rows of one statement run on a thread's read-only connection to the index's file. */
  query(sql: string, params: unknown[]): Promise<unknown[][]> {
    if (this.file === undefined) return Promise.reject(new Error('the index is in memory'));
    return this.post('reading the index', (id) => ({
      id,
      query: { sql, params },
      file: this.file,
      cacheKib: this.cacheKib,
    })) as Promise<unknown[][]>;
  }

  /** `joined`: the texts as `joinTexts` joins them, when at hand (the writing thread was given them so). */
  async prepare(texts: string[], joined?: JoinedTexts): Promise<PreparedBatch> {
    return (await this.prepareWith(texts, joined)).batch;
  }

  /**
   * `prepare`, and with `records` the store's records too (`prepareRecords`, with their graph
   * when `records.graph`), from the same parse.
   */
  prepareWith(texts: string[], joined?: JoinedTexts, records?: { graph: boolean }): Promise<Prepared> {
    return this.post('preparing a batch', (id) => ({
      id,
      ...(joined ?? joinTexts(texts)),
      file: this.file,
      cacheKib: this.cacheKib,
      ...(records ? { records } : {}),
    })) as Promise<Prepared>;
  }

  /**
   * Starts every thread now, so the first batch waits for none to load its modules (about a
   * second of CPU each); settles once they all have.
   */
  async warm(): Promise<void> {
    await Promise.all(
      Array.from({ length: WORKERS }, (_, slot) => this.post('starting', (id) => ({ id, warm: true }), slot)),
    );
  }

  private post(
    what: string,
    message: (id: number) => object,
    slot?: number,
  ): Promise<Prepared | unknown[][]> {
    const id = this.next++;
    const { worker, waiting } = this.start(slot ?? id % WORKERS);
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject, what });
      worker.ref();
      worker.postMessage(message(id));
    });
  }

  private start(slot: number): { worker: Worker; waiting: Map<number, Waiting> } {
    const running = this.workers[slot];
    if (running) return running;
    const worker = new Worker(new URL('../../src/worker-boot.mjs', import.meta.url), {
      workerData: { module: new URL('./prepare-worker.ts', import.meta.url).href },
    });
    worker.unref();
    const entry = { worker, waiting: new Map<number, Waiting>() };
    const fail = (err: Error) => {
      for (const w of entry.waiting.values()) w.reject(err);
      entry.waiting.clear();
      if (this.workers[slot] === entry) this.workers[slot] = null;
    };
    worker.on('message', (reply: Reply) => {
      const w = entry.waiting.get(reply.id);
      if (!w) return;
      entry.waiting.delete(reply.id);
      // Let go of while idle, unless it is being stopped (held until it has: see `close`).
      if (entry.waiting.size === 0 && this.workers[slot] === entry) worker.unref();
      if (reply.error !== undefined) w.reject(new Error(`${w.what} failed: ${reply.error}`));
      else w.resolve('rows' in reply ? reply.rows : { batch: reply.batch, records: reply.records });
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the preparing worker exited (code ${code})`)));
    this.workers[slot] = entry;
    return entry;
  }

  async close(): Promise<void> {
    const running = this.workers.filter((w) => w !== null);
    this.workers.fill(null);
    // Held until they have stopped: a worker let go of leaves the event loop empty while its end
    // is awaited, and the process ends there (see JobThread.close).
    await Promise.all(
      running.map((w) => {
        w.worker.ref();
        return w.worker.terminate();
      }),
    );
  }
}
