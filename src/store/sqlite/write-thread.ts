/**
 * Large atomic writes of the embedded store on a thread of their own. One transaction writes the
 * records with every index kept beside them (attribute index, change log, statistics, and the
 * write hooks: search index, provenance edges); a submission of 10^5 records is about 8-9 s of
 * CPU in it, which on the main thread would hold the event loop all that time. The writing
 * thread opens its own connection to the same file and runs the same transaction there; the main
 * thread keeps answering reads meanwhile (WAL: they see the last commit), and its own writes wait
 * in the `WriteGate` instead of in SQLite's busy handler.
 *
 * The thread runs a module (`entry`) that opens the store with the same write hooks the main
 * thread's store has, and calls `serveWrites`. It starts with the first large write, or earlier
 * (`warm`: the service starts it once it listens). Records a write is about to hand over may be staged
 * ahead (`stage`, e.g. while a submission is validated): the thread starts its indexes' work that
 * needs no lock on them, and the write then names the staged records instead of posting them again.
 * When that work also prepared the records for the store (prepared-records.ts), the thread writes
 * them without parsing them.
 */
import os from 'node:os';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import type {
  AtomicWrite,
  CheckedChange,
  CheckedChangeResult,
  Doc,
  RecordKey,
  WriteResult,
} from '../port.ts';
import { joinTexts, splitTexts, type JoinedTexts } from './joined-texts.ts';
import { nextTurn } from '../../turns.ts';
import type { PreparedRecords } from './prepared-records.ts';
import type { HeldWrite, ThreadWrite, WriteHook } from './records.ts';

export interface WriteThreadOptions {
  /** The module the thread runs (TypeScript): it opens the store and calls `serveWrites`. */
  entry: URL;
  /** Atomic writes of at least this many records go to the thread, and staged ones. Default 1000. */
  minRecords?: number;
  /**
   * The nice value the thread lowers its priority to as it starts (see `lowerPriority`); threads
   * it starts inherit it. Default 0: as the process is.
   */
  nice?: number;
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
  nice?: number;
  fault?: WriteFault;
}

/** Work started ahead of a write (see `DocumentStore.prepareAhead`). */
export interface StagedWrite {
  ready: Promise<void>;
  release(): void;
  /**
   * Once ready: the records prepared for the thread itself (prepared-records.ts), when the work
   * prepared them; the thread then parses none of them.
   */
  records?(): PreparedRecords | undefined;
}

/**
 * Texts as a message carries them: joined, or (when longer than PART_CHARS) the parts they were
 * posted in ahead of it (`texts` messages), which the thread joins when the message arrives.
 */
type PostedTexts = JoinedTexts | { parts: number[] };

/** One collection's records of a write, as the thread is given them. */
type Entry = { stage: number } | ({ collection: string } & PostedTexts);

/**
 * The most characters of texts posted in one message: 10^5 biosamples' texts (140 MB) posted
 * whole held the event loop 0.7-1.1 s, serialised by `postMessage`; in parts, a turn between.
 */
const PART_CHARS = 4 * 1024 * 1024;

/** How a held write ends: `finish` with its last records, or `abort`; `id` is the ending's own. */
type Ending =
  | { type: 'finish'; id: number; hold: number; entries: Entry[] }
  | { type: 'abort'; id: number; hold: number };

type Message =
  /** Texts a later message names among its `parts`. */
  | ({ type: 'texts'; part: number } & JoinedTexts)
  /** Parts no message will name (the message could not be posted). */
  | { type: 'drop'; parts: number[] }
  | ({ type: 'stage'; stage: number; collection: string } & JoinedTexts)
  | { type: 'release'; stage: number }
  /** Start what the writes will use (see `WriteThread.warm`), then answer `warmed`. */
  | { type: 'warm'; id: number }
  | { type: 'write'; id: number; entries: Entry[] }
  /**
   * A write whose transaction stays open until its ending (see `WriteThread.hold`); its entries
   * go on in `more` messages up to the `last`.
   */
  | { type: 'hold'; id: number; entries: Entry[] }
  | { type: 'more'; hold: number; entries: Entry[]; last?: true }
  /** A write made only if records are still as expected (see `WriteThread.writeIfUnchanged`). */
  | {
      type: 'checked';
      id: number;
      /** The records' keys (as JSON text), and each one's text as it must still be (`null`: absent). */
      keys: string;
      expected: PostedTexts;
      /** The keys of the records deleted, as JSON text. */
      deletes: string;
      entries: Entry[];
    }
  | Ending;

/** What the thread answers a write with. */
type ThreadResult = WriteResult | CheckedChangeResult;

interface ThreadError {
  name: string;
  message: string;
  code?: string;
}

type Reply =
  /**
   * `checkpointing`: the thread copies the WAL into the file next, then posts `checkpointed`;
   * `parsed`: the records it parsed itself since its last such answer (`WriteThread`'s `parsed`).
   */
  | { id: number; result: ThreadResult; error?: undefined; checkpointing?: true; parsed?: number }
  | { id: number; error: ThreadError }
  /** The thread has started what the writes will use. */
  | { id: number; warmed: true; error?: undefined; result?: undefined }
  /** A hold's records are written and its transaction open. */
  | { id: number; held: true; error?: undefined; result?: undefined }
  /** Posted once the thread has opened the store and listens. */
  | { ready: true }
  /** The checkpoint a `checkpointing` reply announced is over. */
  | { checkpointed: true };

/**
 * The store connection's automatic checkpoint, turned off while the thread copies the WAL of a
 * write it answered into the file: the store's next commit, which the answer lets through, would
 * otherwise do it first on the event loop (1.5 s after a 10^5-biosample submission).
 */
export interface CheckpointSwitch {
  pause(): void;
  resume(): void;
}

interface Waiting {
  resolve(result: ThreadResult | undefined): void;
  reject(err: Error): void;
}

/** A write held open on the thread (see `WriteThread.hold`). */
export interface ThreadHeldWrite {
  finish(more: Array<{ collection: string; texts: string[] }>): Promise<WriteResult>;
  abort(): Promise<void>;
}

const NOTHING_WRITTEN: WriteResult = { inserted: 0, updated: 0 };

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

/** A held write given up (its signal aborted) before it was held: nothing of it was written. */
export class HoldAbandoned extends Error {
  constructor() {
    super('the held write was abandoned before it was held: nothing of it was written');
    this.name = 'HoldAbandoned';
  }
}

export const WRITE_THREAD_MIN_RECORDS = 1000;

/** Posts texts for a message about to be posted; answers how the message names them. */
type TextsPoster = (texts: string[]) => Promise<PostedTexts>;

/** A message that could not be made (its cause): nothing of it was asked of the thread. */
class NotPosted extends Error {
  constructor(override readonly cause: unknown) {
    super('the message to the writing thread could not be posted', { cause });
  }
}

/** The main thread's side: starts the thread on first use, stages and posts writes, hears back. */
export class WriteThread {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  /** Staged texts (by array) and the thread that holds them. */
  private readonly staged = new Map<string[], { stage: number; collection: string; worker: Worker }>();
  private readonly inFlight = new Set<Promise<ThreadResult | undefined>>();
  /** Holds not yet ended, by id: `close` rolls them back. */
  private readonly held = new Set<number>();
  private next = 1;
  private closed = false;
  /** Set when a thread failed before it was ready: the writes stay on the store's connection. */
  private unavailable = false;

  /** Checkpoints announced and not yet over (the store's own are paused meanwhile). */
  private checkpointing = 0;
  /** The thread `warm` started, and its answer. */
  private warmed: { worker: Worker; warming: Promise<unknown> } | undefined;

  /**
   * @param parsed told of the records the thread parsed itself (those it was not handed
   *   prepared, see prepared-records.ts), as it answers writes.
   */
  constructor(
    private readonly file: string,
    private readonly options: WriteThreadOptions,
    private readonly checkpoints?: CheckpointSwitch,
    private readonly parsed?: (records: number) => void,
  ) {}

  /** The store's checkpoints resumed: the thread's announced ones are over, or it is gone. */
  private checkpointsOver(): void {
    if (this.checkpointing === 0) return;
    this.checkpointing = 0;
    this.checkpoints?.resume();
  }

  /** True when this write goes to the thread: it has staged records, or enough records. */
  takes(writes: AtomicWrite[]): boolean {
    if (this.closed || this.unavailable) return false;
    let records = 0;
    for (const w of writes) {
      if (w.texts && this.staged.has(w.texts)) return true;
      records += w.docs.length;
    }
    return this.takesRecords(records);
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
  async write(writes: Array<{ collection: string; texts: string[] }>): Promise<WriteResult> {
    const worker = this.start();
    const id = this.next++;
    const result = await this.post(worker, id, async (texts) => ({
      type: 'write',
      id,
      entries: await this.entriesOf(writes, worker, texts),
    }));
    return (result as WriteResult | undefined) ?? NOTHING_WRITTEN;
  }

  /**
   * `DocumentStore.writeIfUnchanged` on the thread, in one transaction there: `expected` as the
   * records' texts, `writes` as each record's `JSON.stringify`.
   */
  async writeIfUnchanged(change: {
    /** The keys of the records read, as JSON text (an array of `RecordKey`). */
    keys: string;
    /** Each record's text as it must still be: `JSON.stringify` of it, `null` when absent. */
    expected: string[];
    writes: Array<{ collection: string; texts: string[] }>;
    /** The keys of the records deleted, as JSON text. */
    deletes: string;
  }): Promise<CheckedChangeResult> {
    const worker = this.start();
    const id = this.next++;
    // Strings are posted as they are; thousands of small objects cost the posting thread more
    // (100,000 keys of records deleted, posted as objects, held the event loop 0.1 s).
    const { keys, deletes } = change;
    return (await this.post(worker, id, async (texts) => ({
      type: 'checked',
      id,
      keys,
      expected: await texts(change.expected),
      deletes,
      entries: await this.entriesOf(change.writes, worker, texts),
    }))) as CheckedChangeResult;
  }

  /** True when a change of this many records goes to the thread. */
  takesRecords(records: number): boolean {
    return (
      !this.closed && !this.unavailable && records >= (this.options.minRecords ?? WRITE_THREAD_MIN_RECORDS)
    );
  }

  /**
   * Begins a write on the thread and holds its transaction open: answers once `writes` are
   * written there, seen by no reader. `writes` may still be coming: the thread begins with the
   * first and writes each as it comes (a submission's records while the rest are serialised),
   * and the hold answers once the last is written. `finish` adds the last records and commits;
   * `abort` rolls it back. Other writes on the thread wait until it ends, so the caller must end
   * it. A thread that exits meanwhile took the held write with it (nothing of it is written).
   * When `writes` fails, the thread rolls back what it wrote and the failure is thrown.
   */
  async hold(
    writes: AsyncIterable<{ collection: string; texts: string[] }>,
    signal?: AbortSignal,
  ): Promise<ThreadHeldWrite> {
    if (signal?.aborted) throw new HoldAbandoned();
    const worker = this.start();
    const hold = this.next++;
    let ended = false;
    // Abandoned while it is written: the thread stops writing at its next entry and rolls back.
    let abandoned: Promise<unknown> | undefined;
    const abandon = () => {
      if (abandoned) return;
      const id = this.next++;
      abandoned = this.request(worker, id, { type: 'abort', id, hold }).catch(() => undefined);
    };
    signal?.addEventListener('abort', abandon, { once: true });
    const iterator = writes[Symbol.asyncIterator]();
    let answered: Promise<ThreadResult | undefined> | undefined;
    let replied = false;
    try {
      const first = await iterator.next();
      answered = this.request(
        worker,
        hold,
        await this.built(worker, async (texts) => ({
          type: 'hold',
          id: hold,
          entries: first.done ? [] : await this.entriesOf([first.value], worker, texts),
        })),
      );
      // Settles when the thread answers: a failure there ends the wait for more writes.
      const reply = answered.then(
        () => void (replied = true),
        () => void (replied = true),
      );
      // The rest as it comes, each posted as soon as it is (the thread writes them in order).
      for (let next = first; !next.done && !abandoned && !replied;) {
        next = (await Promise.race([iterator.next(), reply])) ?? { done: true, value: undefined };
        if (next.done || abandoned || replied) break;
        const { value } = next;
        worker.postMessage(
          await this.built(worker, async (texts) => ({
            type: 'more',
            hold,
            entries: await this.entriesOf([value], worker, texts),
          })),
        );
      }
      if (replied) void iterator.return?.();
      else worker.postMessage({ type: 'more', hold, entries: [], last: true } satisfies Message);
      await answered;
    } catch (err) {
      // `writes` failed (or could not be posted): what the thread wrote of it is rolled back. (A
      // failure the thread answered has rolled it back there.)
      if (answered && !replied) {
        abandon();
        await answered.catch(() => undefined);
        await abandoned;
      }
      throw err instanceof NotPosted ? err.cause : err;
    } finally {
      signal?.removeEventListener('abort', abandon);
    }
    if (abandoned) {
      await abandoned;
      throw new HoldAbandoned();
    }
    this.held.add(hold);
    const end = async (ending: (id: number, texts: TextsPoster) => Promise<Ending>): Promise<WriteResult> => {
      if (ended) throw new Error('the held write has already ended');
      ended = true;
      this.held.delete(hold);
      if (this.worker !== worker)
        throw new Error(
          "the store's writing thread exited while it held the write: nothing of it was written",
        );
      const id = this.next++;
      try {
        return (
          ((await this.postOrRefuse(worker, id, (texts) => ending(id, texts))) as WriteResult | undefined) ??
          NOTHING_WRITTEN
        );
      } catch (err) {
        // The last records could not be posted: the write is rolled back, not left open.
        if (err instanceof NotPosted) await this.request(worker, id, { type: 'abort', id, hold });
        throw err instanceof NotPosted ? err.cause : err;
      }
    };
    return {
      finish: (more) =>
        end(async (id, texts) => ({
          type: 'finish',
          id,
          hold,
          entries: await this.entriesOf(more, worker, texts),
        })),
      abort: () => end(async (id) => ({ type: 'abort', id, hold })).then(() => undefined),
    };
  }

  /** Writes as the thread is given them: staged texts by their stage, the others posted. */
  private async entriesOf(
    writes: Array<{ collection: string; texts: string[] }>,
    worker: Worker,
    post: TextsPoster,
  ): Promise<Entry[]> {
    const entries: Entry[] = [];
    for (const { collection, texts } of writes) {
      const staged = this.staged.get(texts);
      if (staged && staged.worker === worker && staged.collection === collection) {
        this.staged.delete(texts);
        entries.push({ stage: staged.stage });
      } else entries.push({ collection, ...(await post(texts)) });
    }
    return entries;
  }

  /**
   * Posts the message `build` makes, and answers the thread's reply. `build` is given the means
   * to post texts: over PART_CHARS, in parts ahead of the message, a turn after each. When
   * `build` fails, the parts it posted are dropped and its error thrown (nothing was asked).
   */
  private async post(
    worker: Worker,
    id: number,
    build: (texts: TextsPoster) => Promise<Message>,
  ): Promise<ThreadResult | undefined> {
    try {
      return await this.postOrRefuse(worker, id, build);
    } catch (err) {
      throw err instanceof NotPosted ? err.cause : err;
    }
  }

  /** `post`, a failure of `build` thrown as `NotPosted` (the thread was asked nothing). */
  private async postOrRefuse(
    worker: Worker,
    id: number,
    build: (texts: TextsPoster) => Promise<Message>,
  ): Promise<ThreadResult | undefined> {
    return this.request(worker, id, await this.built(worker, build));
  }

  /**
   * The message `build` makes, the texts it names posted ahead of it (see `post`); a failure of
   * `build` is thrown as `NotPosted`, the parts it posted dropped.
   */
  private async built(worker: Worker, build: (texts: TextsPoster) => Promise<Message>): Promise<Message> {
    const parts: number[] = [];
    let message: Message;
    try {
      message = await build(async (texts) => {
        let chars = 0;
        for (const text of texts) chars += text.length;
        if (chars <= PART_CHARS) return joinTexts(texts);
        const posted: number[] = [];
        for (let from = 0; from < texts.length;) {
          let to = from;
          for (
            let size = 0;
            to < texts.length && (to === from || size + texts[to]!.length <= PART_CHARS);
            to++
          )
            size += texts[to]!.length + 1;
          const part = this.next++;
          worker.postMessage({ type: 'texts', part, ...joinTexts(texts.slice(from, to)) } satisfies Message);
          parts.push(part);
          posted.push(part);
          from = to;
          await nextTurn();
        }
        return { parts: posted };
      });
    } catch (err) {
      if (parts.length > 0) worker.postMessage({ type: 'drop', parts } satisfies Message);
      throw new NotPosted(err);
    }
    return message;
  }

  /** Posts a message the thread answers under `id`. */
  private request(worker: Worker, id: number, message: Message): Promise<ThreadResult | undefined> {
    const answered = new Promise<ThreadResult | undefined>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage(message);
    });
    this.inFlight.add(answered);
    const settled = () => void this.inFlight.delete(answered);
    answered.then(settled, settled);
    return answered;
  }

  private start(): Worker {
    if (this.closed) throw new Error('the store is closed');
    if (this.worker) return this.worker;
    const data: WriteThreadData = {
      module: this.options.entry.href,
      file: this.file,
      nice: this.options.nice,
      fault: this.options.fault,
    };
    const worker = new Worker(new URL('../../worker-boot.mjs', import.meta.url), { workerData: data });
    worker.unref();
    let ready = false;
    const fail = (cause: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.checkpointsOver();
      const err = ready ? cause : new WriteThreadUnavailable(cause);
      if (!ready) this.unavailable = true;
      for (const [texts, entry] of this.staged) if (entry.worker === worker) this.staged.delete(texts);
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('message', (reply: Reply) => {
      if ('ready' in reply) return void (ready = true);
      if ('checkpointed' in reply) {
        if (this.checkpointing > 0 && --this.checkpointing === 0) this.checkpoints?.resume();
        return;
      }
      // Before the writer hears of it (and its next commit follows).
      if ('checkpointing' in reply && this.checkpointing++ === 0) this.checkpoints?.pause();
      if ('parsed' in reply && reply.parsed) this.parsed?.(reply.parsed);
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

  /**
   * Starts the thread now, and the threads it hands its indexes' work to, rather than with the
   * first large write: each loads its modules (about a second of CPU), which a submission would
   * otherwise wait for. They do nothing until a write comes, and do not keep the process alive.
   * Settles once they have started (rejects when the thread cannot start); once per thread.
   */
  async warm(): Promise<void> {
    if (this.closed || this.unavailable) return;
    const worker = this.start();
    if (this.warmed?.worker !== worker) {
      const id = this.next++;
      this.warmed = { worker, warming: this.request(worker, id, { type: 'warm', id }) };
    }
    await this.warmed.warming;
  }

  /** Rolls back the writes still held, waits for the writes under way, then stops the thread. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (worker)
      for (const hold of this.held) {
        const id = this.next++;
        void this.request(worker, id, { type: 'abort', id, hold }).catch(() => undefined);
      }
    this.held.clear();
    await Promise.allSettled(this.inFlight);
    this.worker = null;
    await worker?.terminate();
  }
}

/** The part of the thread's store `serveWrites` uses. */
export interface ThreadStore {
  beginAtomically(): Promise<HeldWrite>;
  writeIfUnchanged(change: CheckedChange): Promise<CheckedChangeResult>;
  addWriteHook(hook: WriteHook): void;
  deferCheckpoints(): void;
  checkpoint(): void;
}

/**
 * Lowers the calling thread's priority to the nice value `nice` (Linux keeps one per thread:
 * `setpriority` of process 0 sets the caller's alone). A large write's thread then takes the CPU
 * that the event loops answering requests leave, instead of an equal share: on 2 cores, 500 reads
 * a second asked while 10^5 biosamples were submitted (`npm run bench:load -- --submit 100000
 * --rate 500`) took 40-42 ms p50 at the same priority, 3 ms at nice 10 (p99 1.3-1.7 s, 0.24-1.1 s).
 * Threads started from this one (the search index's preparing workers) inherit it. Elsewhere the
 * call would lower the whole process, so it is not made; a system that refuses it leaves the
 * thread as it is.
 */
function lowerPriority(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    if (os.getPriority(0) < nice) os.setPriority(0, Math.min(19, nice));
  } catch {
    // Not allowed here: the thread runs as it is.
  }
}

/**
 * The thread's side: answers the main thread's messages with `store` (opened on the file the
 * thread was given, with the same write hooks as the main thread's). `prepareAhead` starts the
 * indexes' work for staged records. A write that meets another connection's lock waits as the
 * store's writes do (busy.ts), then fails with the store's refusal.
 */
export function serveWrites(
  store: ThreadStore,
  prepareAhead: (collection: string, texts: string[], joined: JoinedTexts) => StagedWrite[],
  warm: () => Promise<void>,
): void {
  const data = workerData as WriteThreadData;
  lowerPriority(data.nice ?? 0);
  const fault = data.fault && injectFault(store, data.fault);
  // The thread's writes are large: the WAL they leave is copied into the file after each one's
  // answer is posted, not inside its commit. (The store's own connection checkpoints as SQLite
  // does, paused only while this thread's checkpoint runs: a WAL left here is copied either way.)
  store.deferCheckpoints();
  /** Records parsed here since the last answer (the others came prepared). */
  let parsed = 0;
  /** Answers a write, then copies the WAL into the file (the main thread's store waits for it to). */
  const answer = (id: number, result: ThreadResult) => {
    parentPort!.postMessage({ id, result, checkpointing: true, parsed } satisfies Reply);
    parsed = 0;
    try {
      store.checkpoint();
    } catch {
      // A later commit's checkpoint copies it instead.
    } finally {
      parentPort!.postMessage({ checkpointed: true } satisfies Reply);
    }
  };
  const staged = new Map<
    number,
    { collection: string; joined: JoinedTexts; texts: string[]; ahead: StagedWrite[] }
  >();
  let queue = Promise.resolve();
  /** Endings of held writes, by hold, that came before the hold waited for them. */
  const endings = new Map<number, Ending>();
  /** Holds waiting for their ending. */
  const awaiting = new Map<number, (ending: Ending) => void>();
  /** Each hold's entries as they came, until it is written: whether the last came, and its wait for more. */
  const streams = new Map<number, { entries: Entry[]; last: boolean; wake?: () => void }>();
  /** Wakes a hold waiting for more entries (they came, or its ending). */
  const wake = (hold: number) => {
    const stream = streams.get(hold);
    const waiting = stream?.wake;
    if (!stream || !waiting) return;
    stream.wake = undefined;
    waiting();
  };

  /** Texts posted in parts ahead of the message that names them, by part. */
  const parts = new Map<number, JoinedTexts>();
  /** The texts as a message names them, joined (its parts are let go). */
  const joinedOf = (texts: PostedTexts): JoinedTexts => {
    if (!('parts' in texts)) return texts;
    const pieces = texts.parts.map((part) => {
      const piece = parts.get(part);
      if (!piece) throw new Error(`the writing thread holds no texts part ${part}`);
      parts.delete(part);
      return piece;
    });
    const lengths = new Int32Array(pieces.reduce((n, p) => n + p.lengths.length, 0));
    let at = 0;
    for (const piece of pieces) {
      lengths.set(piece.lengths, at);
      at += piece.lengths.length;
    }
    return { joined: pieces.map((p) => p.joined).join(','), lengths };
  };
  /** The message with the texts it names by parts joined. */
  const withTexts = <M extends Message>(m: M): M => {
    const entries = (list: Entry[]) =>
      list.map((e): Entry => ('stage' in e ? e : { collection: e.collection, ...joinedOf(e) }));
    if (m.type === 'checked') return { ...m, expected: joinedOf(m.expected), entries: entries(m.entries) };
    if (m.type === 'write' || m.type === 'hold' || m.type === 'more' || m.type === 'finish')
      return { ...m, entries: entries(m.entries) };
    return m;
  };

  const fail = (id: number, err: unknown) => {
    const e = err instanceof Error ? err : new Error(String(err));
    const code = (e as { code?: unknown }).code;
    parentPort!.postMessage({
      id,
      error: { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}) },
    } satisfies Reply);
  };

  /** The records of `entries` (staged ones taken, their work ahead awaited), and the work ahead to release. */
  const recordsOf = async (entries: Entry[], used: Array<{ ahead: StagedWrite[] }>) => {
    const writes = entries.map((entry) => {
      if ('stage' in entry) {
        const s = staged.get(entry.stage);
        if (!s) throw new Error(`the writing thread holds no staged records ${entry.stage}`);
        staged.delete(entry.stage);
        used.push(s);
        return { collection: s.collection, joined: s.joined, texts: s.texts, ahead: s.ahead };
      }
      const joined = joinedOf(entry);
      return { collection: entry.collection, joined, texts: splitTexts(joined), ahead: undefined };
    });
    await Promise.all(used.flatMap((s) => s.ahead.map((a) => a.ready)));
    return writes.map(({ collection, joined, texts, ahead }): ThreadWrite => {
      // Records the work ahead prepared are not parsed here (see prepared-records.ts).
      const prepared = ahead?.map((a) => a.records?.()).find((r) => r !== undefined);
      if (prepared) return { collection, texts, prepared };
      const docs = JSON.parse(`[${joined.joined}]`) as Doc[];
      if (docs.length !== texts.length) throw new Error('a record text is not one JSON value');
      parsed += docs.length;
      return { collection, docs, texts };
    });
  };

  /** Lets go of the staged records of entries a held write did not reach (it failed or was abandoned first). */
  const forget = (entries: Entry[]) => {
    for (const entry of entries) {
      if (!('stage' in entry)) continue;
      for (const a of staged.get(entry.stage)?.ahead ?? []) a.release();
      staged.delete(entry.stage);
    }
  };

  const write = async (id: number, entries: Entry[]): Promise<void> => {
    const used: Array<{ ahead: StagedWrite[] }> = [];
    try {
      const records = await recordsOf(entries, used);
      fault?.reset();
      // One transaction, as `upsertAtomically`, of the records as they came (prepared or not).
      const held = await store.beginAtomically();
      answer(id, held.finish(records));
    } catch (err) {
      fail(id, err);
    } finally {
      for (const s of used) for (const a of s.ahead) a.release();
    }
  };

  /** A change written only if the records are still as expected (parsed here, off the event loop). */
  const checked = async (m: Extract<Message, { type: 'checked' }>): Promise<void> => {
    const used: Array<{ ahead: StagedWrite[] }> = [];
    try {
      const writes = (await recordsOf(m.entries, used)).map((w) => {
        if (!('prepared' in w)) return { collection: w.collection, docs: w.docs };
        parsed += w.texts.length;
        return { collection: w.collection, docs: w.texts.map((text) => JSON.parse(text) as Doc) };
      });
      const texts = splitTexts(joinedOf(m.expected));
      const expected = (JSON.parse(m.keys) as RecordKey[]).map(({ collection, id }, i) => ({
        collection,
        id,
        doc: JSON.parse(texts[i]!) as Doc | null,
      }));
      fault?.reset();
      const deletes = JSON.parse(m.deletes) as RecordKey[];
      answer(m.id, await store.writeIfUnchanged({ expected, writes, deletes }));
    } catch (err) {
      fail(m.id, err);
    } finally {
      for (const s of used) for (const a of s.ahead) a.release();
    }
  };

  /**
   * A held write: written, answered, then kept open (and every later write waiting) until its
   * ending. Its transaction begins at once, and each entry is written as soon as the work started
   * ahead for it is done, so the indexes' preparation on the workers and this thread's writing
   * overlap; entries still coming (`more`) are waited for up to the last.
   */
  const hold = async (id: number): Promise<void> => {
    const stream = streams.get(id)!;
    const { entries } = stream;
    let held: HeldWrite | undefined;
    let next = 0;
    try {
      fault?.reset();
      held = await store.beginAtomically();
      // An abort that came meanwhile (the caller gave it up) stops the writing at the next entry.
      while (endings.get(id)?.type !== 'abort') {
        if (next === entries.length) {
          if (stream.last) break;
          await new Promise<void>((resolve) => (stream.wake = resolve));
          continue;
        }
        const used: Array<{ ahead: StagedWrite[] }> = [];
        try {
          held.add(await recordsOf([entries[next]!], used));
        } finally {
          for (const s of used) for (const a of s.ahead) a.release();
        }
        next++;
      }
    } catch (err) {
      streams.delete(id);
      held?.abort();
      // An ending that came meanwhile is answered too: nothing was written.
      const early = endings.get(id);
      endings.delete(id);
      if (early)
        parentPort!.postMessage({ id: early.id, result: { inserted: 0, updated: 0 } } satisfies Reply);
      // The staged records of the entries not reached are let go of too.
      forget(entries.slice(next));
      return fail(id, err);
    }
    streams.delete(id);
    forget(entries.slice(next));
    parentPort!.postMessage({ id, held: true } satisfies Reply);
    const ending = endings.get(id) ?? (await new Promise<Ending>((resolve) => awaiting.set(id, resolve)));
    endings.delete(id);
    awaiting.delete(id);
    const ended: Array<{ ahead: StagedWrite[] }> = [];
    try {
      if (ending.type === 'abort') {
        held.abort();
        parentPort!.postMessage({ id: ending.id, result: { inserted: 0, updated: 0 } } satisfies Reply);
      } else {
        const more = await recordsOf(ending.entries, ended);
        answer(ending.id, held.finish(more));
      }
    } catch (err) {
      held.abort();
      fail(ending.id, err);
    } finally {
      for (const s of ended) for (const a of s.ahead) a.release();
    }
  };

  parentPort!.postMessage({ ready: true } satisfies Reply);
  parentPort!.on('message', (posted: Message) => {
    if (posted.type === 'texts') {
      parts.set(posted.part, { joined: posted.joined, lengths: posted.lengths });
      return;
    }
    if (posted.type === 'drop') {
      for (const part of posted.parts) parts.delete(part);
      return;
    }
    if (posted.type === 'warm') {
      const { id } = posted;
      warm().then(
        () => parentPort!.postMessage({ id, warmed: true } satisfies Reply),
        (err: unknown) => fail(id, err),
      );
      return;
    }
    let m: Message;
    try {
      m = withTexts(posted);
    } catch (err) {
      if ('id' in posted) fail(posted.id, err);
      return;
    }
    if (m.type === 'stage') {
      const joined = { joined: m.joined, lengths: m.lengths };
      const texts = splitTexts(joined);
      staged.set(m.stage, {
        collection: m.collection,
        joined,
        texts,
        ahead: prepareAhead(m.collection, texts, joined),
      });
    } else if (m.type === 'release') {
      for (const a of staged.get(m.stage)?.ahead ?? []) a.release();
      staged.delete(m.stage);
    } else if (m.type === 'more') {
      const stream = streams.get(m.hold);
      // A hold already over (it failed, or was abandoned) lets go of what comes after.
      if (!stream) return forget(m.entries);
      stream.entries.push(...m.entries);
      if (m.last) stream.last = true;
      wake(m.hold);
    } else if (m.type === 'finish' || m.type === 'abort') {
      const waiting = awaiting.get(m.hold);
      if (waiting) waiting(m);
      else if (!streams.has(m.hold))
        // The hold is over (it failed): nothing of it is left to end.
        parentPort!.postMessage({ id: m.id, result: { inserted: 0, updated: 0 } } satisfies Reply);
      else {
        endings.set(m.hold, m);
        wake(m.hold);
      }
    } else {
      // One write at a time, in the order posted; a held one until its ending.
      const { id, entries } = m;
      if (m.type === 'hold') streams.set(id, { entries: [...entries], last: false });
      queue = queue.then(() =>
        m.type === 'hold' ? hold(id) : m.type === 'checked' ? checked(m) : write(id, entries),
      );
    }
  });
}

/** A write hook that fails as `fault` says (see `WriteThreadOptions.fault`); `reset` before each write. */
function injectFault(store: ThreadStore, fault: WriteFault): { reset(): void } {
  let written = 0;
  store.addWriteHook({
    onUpsert: (_collection, records) => {
      written += records.ids.length;
      if (written < fault.afterRecords) return;
      if (fault.kind === 'exit') process.exit(1);
      throw new Error(`injected failure after ${fault.afterRecords} records`);
    },
    onDelete: () => undefined,
  });
  return { reset: () => void (written = 0) };
}
