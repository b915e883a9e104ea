/**
 * Aggregation stages run in child processes of their own (pipeline-child.ts), never on the
 * service's event loop. mingo runs a pipeline synchronously and keeps whatever its expressions
 * build: `{$project: {a: {$range: [0, 10000000]}}}` over sixty records exhausted the service's heap
 * and ended its process, and a `$group` over 10^5 records held every other request for 200 ms. A
 * child has a heap of its own (`memoryMb`) and a time limit (`timeMs`): a pipeline over either is
 * a 422 that says which, the child's end costs the service nothing, and one is started again when
 * next needed. Records go to the child as JSON text in chunks, serialised in turns; results come
 * back as each record's JSON text, kept as it is (`runTexts`, a pipeline's final results, answered
 * as that text) or parsed in turns (`run`, results the service reads further).
 *
 * At most `processes` children run at once (each runs one pipeline at a time); more pipelines wait.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { Unprocessable, UnsupportedQuery } from '../errors.ts';
import type { Doc } from '../store/port.ts';
import { JsonText } from '../json-text.ts';
import { Turns } from '../turns.ts';
import type { ChildJob, FromChild, ToChild } from './pipeline-child.ts';

export interface PipelineLimits {
  /** The heap of each child process, MiB (`--max-old-space-size`). */
  memoryMb: number;
  /** How long one pipeline may run, ms. */
  timeMs: number;
  /** Children running at once. */
  processes: number;
}

/** One run of stages over records. */
export interface PipelineJob {
  stages: Array<Record<string, unknown>>;
  docs: Doc[];
  /**
   * Instead of `docs`: the records as the store keeps them (each `JSON.stringify` of a record with
   * an id), read batch by batch as they are sent, as they are; the pipeline sees each with `_id`,
   * its id. When reading them throws, the run fails with that error.
   */
  stored?: AsyncIterable<string[]>;
}

export interface PipelineCounters {
  /** Chunks of records sent to a child whose pipe has taken them. */
  chunksTaken: number;
}

/** Records per chunk sent to a child. */
const RECORDS_PER_CHUNK = 500;
/**
 * Chunks sent to a child and not yet taken by it; the next waits. Records are then read from the
 * store no faster than the child takes them, and a whole collection is never held here at once.
 */
const CHUNKS_IN_FLIGHT = 2;

/** How long a child waits for work before it ends, ms. */
const IDLE_MS = 30_000;

const BOOT = new URL('../process-boot.mjs', import.meta.url);
const CHILD = new URL('./pipeline-child.ts', import.meta.url).href;

/** A child process and the run it is doing. */
class PipelineChild {
  readonly process: ChildProcess;
  /** Resolves once the child has loaded its modules; rejects if it ends first. */
  private readonly ready: Promise<void>;
  private listener: ((message: FromChild) => void) | undefined;
  private ended: ((why: Error) => void) | undefined;
  /** True once the process has ended, or been told to. */
  exited = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: PipelineLimits,
    private readonly counters: PipelineCounters,
  ) {
    this.process = fork(BOOT, [CHILD], {
      execArgv: [`--max-old-space-size=${limits.memoryMb}`],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    // The child's stderr carries V8's report when its heap runs out: drained, not kept.
    this.process.stderr?.resume();
    this.idle();
    this.ready = new Promise((resolve, reject) => {
      this.listener = (message) => {
        if (message.type === 'ready') resolve();
      };
      this.ended = reject;
    });
    this.ready.catch(() => undefined);
    this.process.on('message', (message: FromChild) => this.listener?.(message));
    this.process.on('exit', (code, signal) => {
      this.exited = true;
      this.ended?.(
        // V8 ends a process whose heap is exhausted with SIGABRT, and one asked for an array or
        // string over its largest size with SIGTRAP.
        signal === 'SIGABRT' || signal === 'SIGTRAP' || code === 134 || code === 133
          ? new Unprocessable(
              `The aggregation needed more than the ${this.limits.memoryMb} MiB its process may use; ` +
                'narrow it (a leading $match, $project or $limit) or raise AGGREGATE_MEMORY_MB',
            )
          : new Unprocessable(
              `The aggregation's process ended before answering (${signal ?? `exit code ${code}`})`,
            ),
      );
    });
    this.process.on('error', (err) => this.ended?.(err));
  }

  /**
   * Lets the service's process exit while this child waits for work, and ends the child once it
   * has waited IDLE_MS (its heap may hold what its last pipeline built).
   */
  private idle(): void {
    this.process.unref();
    (this.process.channel as { unref?: () => void } | undefined)?.unref?.();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.end(), IDLE_MS);
    this.idleTimer.unref();
  }

  private busy(): void {
    clearTimeout(this.idleTimer);
    this.process.ref();
    (this.process.channel as { ref?: () => void } | undefined)?.ref?.();
  }

  /** Ends the process (it is not used again). */
  end(): void {
    clearTimeout(this.idleTimer);
    if (this.exited) return;
    this.exited = true;
    this.process.kill();
  }

  async run<R extends Doc | JsonText>(jobs: PipelineJob[], result: (text: string) => R): Promise<R[][]> {
    this.busy();
    try {
      await this.ready;
      return await this.exchange(jobs, result);
    } finally {
      this.listener = undefined;
      this.ended = undefined;
      if (!this.exited) this.idle();
    }
  }

  private exchange<R>(jobs: PipelineJob[], result: (text: string) => R): Promise<R[][]> {
    return new Promise<R[][]>((resolve, reject) => {
      const results: R[][] = jobs.map(() => []);
      const chunks: Array<{ job: number; texts: string[] }> = [];
      let finished = false;
      let done = false;
      const timer = setTimeout(() => {
        this.exited = true; // from now on: its exit is on its way
        clearTimeout(this.idleTimer);
        this.process.kill('SIGKILL');
        fail(
          new Unprocessable(
            `The aggregation ran for more than ${this.limits.timeMs / 1000} s, the most one may; ` +
              'narrow it (a leading $match, $project or $limit) or raise AGGREGATE_TIME_LIMIT_SECONDS',
          ),
        );
      }, this.limits.timeMs);
      const fail = (err: Error) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        reject(err);
      };
      this.ended = fail;
      // Results are parsed in turns as they come; `done` settles once all are parsed.
      const turns = new Turns();
      let parsing = false;
      const parse = async () => {
        if (parsing) return;
        parsing = true;
        try {
          while (chunks.length > 0 && !finished) {
            const { job, texts } = chunks.shift()!;
            for (const text of texts) {
              results[job]!.push(result(text));
              if (turns.due()) await turns.give();
            }
          }
          if (done && chunks.length === 0 && !finished) {
            finished = true;
            clearTimeout(timer);
            resolve(results);
          }
        } catch (err) {
          fail(err as Error);
        } finally {
          parsing = false;
        }
      };
      this.listener = (message) => {
        if (message.type === 'results') chunks.push({ job: message.job, texts: message.texts });
        else if (message.type === 'done') done = true;
        else if (message.type === 'error') {
          fail(
            message.unsupported
              ? new UnsupportedQuery(message.message)
              : new Unprocessable(`Aggregation failed: ${message.message}`),
          );
          return;
        } else return;
        void parse();
      };
      // A child left with part of a set cannot run another pipeline: it ends.
      this.send(jobs).catch((err: Error) => {
        this.end();
        fail(err);
      });
    });
  }

  /**
   * The jobs' records, and the records their `$lookup` stages join, as numbered sets in chunks
   * (serialised in turns, at most CHUNKS_IN_FLIGHT on their way at once), then the jobs naming
   * their sets.
   */
  private async send(jobs: PipelineJob[]): Promise<void> {
    const turns = new Turns();
    type Records = Doc[] | AsyncIterable<string[]>;
    const sets = new Map<Records, number>();
    const pending: Records[] = [];
    const setOf = (records: Records): number => {
      let set = sets.get(records);
      if (set === undefined) {
        sets.set(records, (set = sets.size));
        pending.push(records);
      }
      return set;
    };
    const childJobs: ChildJob[] = jobs.map(({ stages, docs, stored }) => ({
      input: setOf(stored ?? docs),
      stages: stages.map((stage) => {
        const lookup = stage.$lookup as Record<string, unknown> | undefined;
        if (!lookup || !Array.isArray(lookup.from)) return stage;
        return { $lookup: { ...lookup, from: { $records: setOf(lookup.from as Doc[]) } } };
      }),
    }));
    const inFlight: Array<Promise<void>> = [];
    const paced = async (message: ToChild) => {
      inFlight.push(this.postSent(message));
      if (inFlight.length >= CHUNKS_IN_FLIGHT) await inFlight.shift();
      if (turns.due()) await turns.give();
    };
    for (const [set, records] of pending.entries()) {
      if (Array.isArray(records)) {
        for (let i = 0; i < records.length; i += RECORDS_PER_CHUNK)
          await paced({
            type: 'records',
            set,
            text: JSON.stringify(records.slice(i, i + RECORDS_PER_CHUNK)),
          });
        continue;
      }
      // Stored records are JSON text already: joined, not serialised again.
      let chunk: string[] = [];
      for await (const batch of records) {
        for (const text of batch) {
          chunk.push(text);
          if (chunk.length < RECORDS_PER_CHUNK) continue;
          await paced({ type: 'records', set, text: `[${chunk.join(',')}]`, stored: true });
          chunk = [];
        }
      }
      if (chunk.length > 0) await paced({ type: 'records', set, text: `[${chunk.join(',')}]`, stored: true });
    }
    await Promise.all(inFlight);
    this.post({ type: 'run', jobs: childJobs });
  }

  private post(message: ToChild): void {
    if (this.exited) throw new Unprocessable("The aggregation's process ended before answering");
    this.process.send(message);
  }

  /** `post`, settled once the message has gone to the child (its pipe took it). */
  private postSent(message: ToChild): Promise<void> {
    if (this.exited)
      return Promise.reject(new Unprocessable("The aggregation's process ended before answering"));
    const sent = new Promise<void>((resolve, reject) =>
      this.process.send(message, undefined, {}, (err) => {
        if (err) return reject(err);
        this.counters.chunksTaken++;
        resolve();
      }),
    );
    sent.catch(() => undefined); // awaited in turn, or left when sending stops early
    return sent;
  }
}

/** The children, started on first use, at most `limits.processes` at once. */
export class PipelineProcesses {
  private readonly idle: PipelineChild[] = [];
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** What the children were given (read by tests). */
  readonly counters: PipelineCounters = { chunksTaken: 0 };

  constructor(readonly limits: PipelineLimits) {}

  /** Each job's results, in its order; the jobs run in one child, one after another. */
  run(jobs: PipelineJob[]): Promise<Doc[][]> {
    return this.runIn(jobs, (text) => JSON.parse(text) as Doc);
  }

  /** `run`, each result as its JSON text (not parsed here). */
  runTexts(jobs: PipelineJob[]): Promise<JsonText[][]> {
    return this.runIn(jobs, (text) => new JsonText(text));
  }

  private async runIn<R extends Doc | JsonText>(
    jobs: PipelineJob[],
    result: (text: string) => R,
  ): Promise<R[][]> {
    if (this.running >= this.limits.processes)
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    let child: PipelineChild | undefined;
    try {
      child = this.idle.pop() ?? new PipelineChild(this.limits, this.counters);
      if (child.exited) child = new PipelineChild(this.limits, this.counters);
      return await child.run(jobs, result);
    } finally {
      if (child && !child.exited) this.idle.push(child);
      this.running--;
      this.waiting.shift()?.();
    }
  }

  /** Ends the idle children (a running one ends when the service's process does). */
  close(): void {
    for (const child of this.idle.splice(0)) child.end();
  }
}
