/**
 * Prepares batches of records given as JSON text on one worker thread, in the order asked. The
 * thread starts on first use and holds the process open only while a batch is under way.
 */
import { Worker } from 'node:worker_threads';
import type { PreparedBatch } from './prepared-batch.ts';

type Reply = { id: number; batch: PreparedBatch; error?: undefined } | { id: number; error: string };

export class WorkerPreparer {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, { resolve(b: PreparedBatch): void; reject(e: Error): void }>();
  private next = 0;

  prepare(texts: string[]): Promise<PreparedBatch> {
    const worker = this.start();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, texts });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), {
      workerData: { module: new URL('./prepare-worker.ts', import.meta.url).href },
    });
    worker.unref();
    const fail = (err: Error) => {
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
      if (this.worker === worker) this.worker = null;
    };
    worker.on('message', (reply: Reply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (reply.error !== undefined) w.reject(new Error(`preparing a batch failed: ${reply.error}`));
      else w.resolve(reply.batch);
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the preparing worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
