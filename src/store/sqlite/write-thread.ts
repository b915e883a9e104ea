/**
 * Large atomic writes of the embedded store on a thread of their own. One transaction writes the
 * records with every index kept beside them (attribute index, change log, statistics, and the
 * write hooks: search index, provenance edges); a submission of 10^5 records is about 16 s of
 * CPU in it, which on the main thread would hold the event loop all that time. The writing
 * thread opens its own connection to the same file and runs the same transaction there; the main
 * thread keeps answering reads meanwhile (WAL: they see the last commit), and its own writes wait
 * in the `WriteGate` instead of in SQLite's busy handler.
 *
 * The thread runs a module (`entry`) that opens the store with the same write hooks the main
 * thread's store has, and calls `serveWrites`. Records a write is about to hand over may be staged
 * ahead (`stage`, e.g. while a submission is validated): the thread starts its indexes' work that
 * needs no lock on them, and the write then names the staged records instead of posting them again.
 */
import { parentPort, Worker, workerData } from 'node:worker_threads';
import type { Doc, WriteResult } from '../port.ts';
import { joinTexts, splitTexts, type JoinedTexts } from './joined-texts.ts';

export interface WriteThreadOptions {
  /** The module the thread runs (TypeScript): it opens the store and calls `serveWrites`. */
  entry: URL;
  /** Atomic writes of at least this many records go to the thread, and staged ones. Default 1000. */
  minRecords?: number;
  /**
   * Fault injection for tests: once a write has written `afterRecords` records, inside its
   * transaction, the thread's write hook throws (`throw`) or the thread exits (`exit`).
   */
  fault?: WriteFault;
}

export interface WriteFault {
  afterRecords: number;
  kind: 'throw' | 'exit';
}

/** What the thread is started with. */
export interface WriteThreadData {
  module: string;
  file: string;
  fault?: WriteFault;
}

/** Work started ahead of a write (see `DocumentStore.prepareAhead`). */
export interface StagedWrite {
  ready: Promise<void>;
  release(): void;
}

/** One collection's records of a write, as the thread is given them. */
type Entry = { stage: number } | ({ collection: string } & JoinedTexts);

type Message =
  | ({ type: 'stage'; stage: number; collection: string } & JoinedTexts)
  | { type: 'release'; stage: number }
  | { type: 'write'; id: number; entries: Entry[] };

interface ThreadError {
  name: string;
  message: string;
  code?: string;
}

type Reply =
  | { id: number; result: WriteResult; error?: undefined }
  | { id: number; error: ThreadError }
  /** Posted once the thread has opened the store and listens. */
  | { ready: true };

interface Waiting {
  resolve(result: WriteResult): void;
  reject(err: Error): void;
}

/** An error the thread reported, as it was there (a SQLite error keeps its `code`). */
export class WriteThreadError extends Error {
  readonly code?: string;

  constructor(reported: ThreadError) {
    super(reported.message);
    this.name = reported.name;
    if (reported.code !== undefined) this.code = reported.code;
  }
}

/**
 * The thread could not start (its module failed to load, or the store to open there): it wrote
 * nothing, and no later write is handed to it.
 */
export class WriteThreadUnavailable extends Error {
  constructor(cause: Error) {
    super(`the store's writing thread could not start: ${cause.message}`, { cause });
    this.name = 'WriteThreadUnavailable';
  }
}

export const WRITE_THREAD_MIN_RECORDS = 1000;

/** The main thread's side: starts the thread on first use, stages and posts writes, hears back. */
export class WriteThread {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  /** Staged texts (by array) and the thread that holds them. */
  private readonly staged = new Map<string[], { stage: number; collection: string; worker: Worker }>();
  private readonly inFlight = new Set<Promise<WriteResult>>();
  private next = 1;
  private closed = false;
  /** Set when a thread failed before it was ready: the writes stay on the store's connection. */
  private unavailable = false;

  constructor(
    private readonly file: string,
    private readonly options: WriteThreadOptions,
  ) {}

  /** True when this write goes to the thread: it has staged records, or enough records. */
  takes(writes: Array<{ collection: string; docs: Doc[]; texts?: string[] }>): boolean {
    if (this.closed || this.unavailable) return false;
    let records = 0;
    for (const w of writes) {
      if (w.texts && this.staged.has(w.texts)) return true;
      records += w.docs.length;
    }
    return records >= (this.options.minRecords ?? WRITE_THREAD_MIN_RECORDS);
  }

  /**
   * Hands the thread records an atomic write will be given as these texts (the same array), so it
   * prepares them while the caller does other work. Undefined for fewer than `minRecords` records
   * (a small write is quicker on the store's connection), or when no thread takes writes.
   */
  stage(collection: string, texts: string[]): StagedWrite | undefined {
    if (this.closed || this.unavailable) return undefined;
    if (texts.length < (this.options.minRecords ?? WRITE_THREAD_MIN_RECORDS)) return undefined;
    const worker = this.start();
    const stage = this.next++;
    worker.postMessage({ type: 'stage', stage, collection, ...joinTexts(texts) } satisfies Message);
    this.staged.set(texts, { stage, collection, worker });
    return {
      ready: Promise.resolve(),
      release: () => {
        const entry = this.staged.get(texts);
        if (entry?.stage !== stage) return; // written, so the thread let it go
        this.staged.delete(texts);
        if (this.worker === worker) worker.postMessage({ type: 'release', stage } satisfies Message);
      },
    };
  }

  /**
   * Writes on the thread, all or nothing. `texts` are each record's `JSON.stringify`, as the
   * store keeps it.
   */
  write(writes: Array<{ collection: string; texts: string[] }>): Promise<WriteResult> {
    const worker = this.start();
    const entries = writes.map(({ collection, texts }): Entry => {
      const staged = this.staged.get(texts);
      if (staged && staged.worker === worker && staged.collection === collection) {
        this.staged.delete(texts);
        return { stage: staged.stage };
      }
      return { collection, ...joinTexts(texts) };
    });
    const id = this.next++;
    const written = new Promise<WriteResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ type: 'write', id, entries } satisfies Message);
    });
    this.inFlight.add(written);
    const settled = () => void this.inFlight.delete(written);
    written.then(settled, settled);
    return written;
  }

  private start(): Worker {
    if (this.closed) throw new Error('the store is closed');
    if (this.worker) return this.worker;
    const data: WriteThreadData = {
      module: this.options.entry.href,
      file: this.file,
      fault: this.options.fault,
    };
    const worker = new Worker(new URL('../../worker-boot.mjs', import.meta.url), { workerData: data });
    worker.unref();
    let ready = false;
    const fail = (cause: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const err = ready ? cause : new WriteThreadUnavailable(cause);
      if (!ready) this.unavailable = true;
      for (const [texts, entry] of this.staged) if (entry.worker === worker) this.staged.delete(texts);
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('message', (reply: Reply) => {
      if ('ready' in reply) return void (ready = true);
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (reply.error !== undefined) w.reject(new WriteThreadError(reply.error));
      else w.resolve(reply.result);
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the store's writing thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Waits for the writes under way, then stops the thread. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.inFlight);
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }
}

/** The part of the thread's store `serveWrites` uses. */
export interface ThreadStore {
  upsertAtomically(
    writes: Array<{ collection: string; docs: Doc[]; texts?: string[] }>,
  ): Promise<WriteResult>;
  addWriteHook(hook: { onUpsert(collection: string, docs: Doc[]): void; onDelete(): void }): void;
}

/**
 * The thread's side: answers the main thread's messages with `store` (opened on the file the
 * thread was given, with the same write hooks as the main thread's). `prepareAhead` starts the
 * indexes' work for staged records. A write that meets another connection's lock waits as the
 * store's writes do (busy.ts), then fails with the store's refusal.
 */
export function serveWrites(
  store: ThreadStore,
  prepareAhead: (collection: string, texts: string[]) => StagedWrite[],
): void {
  const data = workerData as WriteThreadData;
  const fault = data.fault && injectFault(store, data.fault);
  const staged = new Map<
    number,
    { collection: string; joined: JoinedTexts; texts: string[]; ahead: StagedWrite[] }
  >();
  let queue = Promise.resolve();

  const write = async (id: number, entries: Entry[]): Promise<void> => {
    const used: Array<{ ahead: StagedWrite[] }> = [];
    try {
      const writes = entries.map((entry) => {
        if ('stage' in entry) {
          const s = staged.get(entry.stage);
          if (!s) throw new Error(`the writing thread holds no staged records ${entry.stage}`);
          staged.delete(entry.stage);
          used.push(s);
          return { collection: s.collection, joined: s.joined, texts: s.texts };
        }
        return { collection: entry.collection, joined: entry, texts: splitTexts(entry) };
      });
      await Promise.all(used.flatMap((s) => s.ahead.map((a) => a.ready)));
      fault?.reset();
      const result = await store.upsertAtomically(
        writes.map(({ collection, joined, texts }) => {
          const docs = JSON.parse(`[${joined.joined}]`) as Doc[];
          if (docs.length !== texts.length) throw new Error('a record text is not one JSON value');
          return { collection, docs, texts };
        }),
      );
      parentPort!.postMessage({ id, result } satisfies Reply);
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      const code = (e as { code?: unknown }).code;
      parentPort!.postMessage({
        id,
        error: { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) },
      } satisfies Reply);
    } finally {
      for (const s of used) for (const a of s.ahead) a.release();
    }
  };

  parentPort!.postMessage({ ready: true } satisfies Reply);
  parentPort!.on('message', (m: Message) => {
    if (m.type === 'stage') {
      const joined = { joined: m.joined, lengths: m.lengths };
      const texts = splitTexts(joined);
      staged.set(m.stage, {
        collection: m.collection,
        joined,
        texts,
        ahead: prepareAhead(m.collection, texts),
      });
    } else if (m.type === 'release') {
      for (const a of staged.get(m.stage)?.ahead ?? []) a.release();
      staged.delete(m.stage);
    } else {
      // One write at a time, in the order posted.
      queue = queue.then(() => write(m.id, m.entries));
    }
  });
}

/** A write hook that fails as `fault` says (see `WriteThreadOptions.fault`); `reset` before each write. */
function injectFault(store: ThreadStore, fault: WriteFault): { reset(): void } {
  let written = 0;
  store.addWriteHook({
    onUpsert: (_collection, docs) => {
      written += docs.length;
      if (written < fault.afterRecords) return;
      if (fault.kind === 'exit') process.exit(1);
      throw new Error(`injected failure after ${fault.afterRecords} records`);
    },
    onDelete: () => undefined,
  });
  return { reset: () => void (written = 0) };
}
