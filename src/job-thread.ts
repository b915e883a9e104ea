/**
 * One worker thread doing jobs one after another for the process, so that CPU-bound work (bcrypt,
 * the schema check of a large record) does not hold the event loop. The thread starts on first
 * use, is let go of (unref) while it has no job, so it never keeps the process alive, and is
 * started again by the next job if it exited. A thread that ends an idle spell of `idleMs` is
 * stopped, giving back its memory (a compiled schema's hundreds of megabytes).
 *
 * The thread's side answers each message `{id, ...job}` with `{id, result}` or `{id, error}`.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

type Reply<R> = { id: number; result: R } | { id: number; error: string };

interface Waiting<R> {
  resolve: (result: R) => void;
  reject: (err: Error) => void;
}

export class JobThread<J extends object, R> {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiting<R>>();
  private next = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** The thread `close` is stopping. */
  private closing: Worker | undefined;

  /**
   * @param entry the thread's module
   * @param options how the thread starts (`execArgv: []` for plain JavaScript needing no loader)
   * @param name what the thread is, in errors (`the bcrypt thread`)
   * @param idleMs stop the thread after this long without a job (never when undefined)
   */
  constructor(
    private readonly entry: URL,
    private readonly options: WorkerOptions,
    private readonly name: string,
    private readonly idleMs?: number,
  ) {}

  /** Runs the job on the thread: its result, or its error as an Error. */
  run(job: J): Promise<R> {
    const id = this.next++;
    const w = this.started();
    clearTimeout(this.idleTimer);
    return new Promise<R>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ ...job, id });
    });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(this.entry, this.options);
    w.unref();
    const fail = (err: Error) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      clearTimeout(this.idleTimer);
      for (const job of this.waiting.values()) job.reject(err);
      this.waiting.clear();
    };
    w.on('message', (reply: Reply<R>) => {
      const job = this.waiting.get(reply.id);
      if (!job) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) this.idle(w);
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve(reply.result);
    });
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`${this.name} exited (code ${code})`)));
    this.worker = w;
    return w;
  }

  private idle(w: Worker): void {
    if (this.closing === w) return;
    w.unref();
    if (this.idleMs === undefined) return;
    this.idleTimer = setTimeout(() => {
      if (this.worker !== w || this.waiting.size > 0) return;
      this.worker = undefined;
      void w.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** Stops the thread; jobs still waiting fail. */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    clearTimeout(this.idleTimer);
    // Held until it has stopped, even when its last reply arrives meanwhile (`idle`): a thread
    // let go of leaves the event loop empty while its end is awaited, and the process ends there
    // with the caller's work undone.
    this.closing = w;
    w.ref();
    await w.terminate();
  }
}
