/**
 * The process that runs aggregation stages (pipeline-processes.ts starts it). It is given each
 * job's records as JSON text in chunks, then the jobs' stages; it runs them with mingo (on the
 * linear-time regular-expression engine, pipeline-engine.ts) and answers each job's results as
 * JSON text in chunks, then `done`. A pipeline that exhausts this process's heap ends this process
 * alone; the service answers 422 and starts another when one is next needed.
 */
import { UnsupportedQuery } from '../errors.ts';
import type { Doc } from '../store/port.ts';
import { linearStages, runLinearPipeline } from './pipeline-engine.ts';

/** A `$lookup`'s `from` standing for a set of records sent ahead (`records` messages). */
export interface RecordsRef {
  $records: number;
}

/** A run of stages over a set of records; a `$lookup` stage's `from` may be a `RecordsRef`. */
export interface ChildJob {
  input: number;
  stages: Array<Record<string, unknown>>;
}

/**
 * What the service sends: sets of records, in chunks, then the jobs over them. Records `stored`
 * are as the store keeps them (with their ids) and are given `_id` here, as a pipeline sees them.
 */
export type ToChild =
  { type: 'records'; set: number; text: string; stored?: boolean } | { type: 'run'; jobs: ChildJob[] };

/** What this process answers. */
export type FromChild =
  | { type: 'ready' }
  | { type: 'results'; job: number; texts: string[] }
  | { type: 'done' }
  | { type: 'error'; unsupported: boolean; message: string };

/** The JSON text of the results per message, at least (a message holds whole records, each its own text). */
const CHUNK_CHARS = 1024 * 1024;
/** The longest a result record may be as JSON text: MongoDB's document limit, 16 MiB. */
export const RESULT_RECORD_CHARS = 16 * 1024 * 1024;
/** The longest the results of one run may be as JSON text, in all. */
export const RESULTS_CHARS = 64 * 1024 * 1024;

/** Thrown for results over the limits above: the caller is told, as for its own mistakes. */
class TooLarge extends UnsupportedQuery {}

const send = (message: FromChild) => process.send!(message);

export const isRecordsRef = (value: unknown): value is RecordsRef =>
  typeof value === 'object' && value !== null && typeof (value as RecordsRef).$records === 'number';

let sets: Doc[][] = [];

/** A job's stages with the records each `$lookup` names in place. */
function withRecords(stages: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return stages.map((stage) => {
    const lookup = stage.$lookup as Record<string, unknown> | undefined;
    if (!lookup || !isRecordsRef(lookup.from)) return stage;
    return { $lookup: { ...lookup, from: sets[lookup.from.$records] ?? [] } };
  });
}

/** A result record's JSON text; over RESULT_RECORD_CHARS is an error, as MongoDB's document limit. */
function resultText(doc: Doc): string {
  const text = JSON.stringify(doc);
  if (text.length > RESULT_RECORD_CHARS)
    throw new TooLarge(
      `A result record of the aggregation is ${text.length} characters of JSON, more than the ` +
        `${RESULT_RECORD_CHARS} a record may be (MongoDB's 16 MiB document limit)`,
    );
  return text;
}

function run(jobs: ChildJob[]): void {
  try {
    // Regular expressions compiled for the linear-time engine here: they do not cross as JSON.
    const results = jobs.map((job) =>
      runLinearPipeline(withRecords(linearStages(job.stages)), sets[job.input] ?? []),
    );
    sets = [];
    // Checked whole before anything is sent: a run answers all its results or an error.
    const texts = results.map((docs) => docs.map(resultText));
    let total = 0;
    for (const jobTexts of texts) for (const text of jobTexts) total += text.length + 1;
    if (total > RESULTS_CHARS)
      throw new TooLarge(
        `The aggregation's results are ${total} characters of JSON, more than the ${RESULTS_CHARS} ` +
          'one may answer; narrow them ($match, $project, $limit)',
      );
    texts.forEach((jobTexts, job) => {
      let chunk: string[] = [];
      let chars = 0;
      const flush = () => {
        send({ type: 'results', job, texts: chunk });
        chunk = [];
        chars = 0;
      };
      for (const text of jobTexts) {
        chunk.push(text);
        chars += text.length;
        if (chars >= CHUNK_CHARS) flush();
      }
      if (chunk.length > 0) flush();
    });
    send({ type: 'done' });
  } catch (err) {
    sets = [];
    send({
      type: 'error',
      unsupported: err instanceof UnsupportedQuery,
      message: err instanceof Error ? err.message : String(err),
    });
  }
}

process.on('message', (message: ToChild) => {
  if (message.type === 'records') {
    const set = (sets[message.set] ??= []);
    for (const doc of JSON.parse(message.text) as Doc[])
      set.push(message.stored ? { _id: doc.id, ...doc } : doc);
  } else run(message.jobs);
});
// The service gone, this process has nothing left to do.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
