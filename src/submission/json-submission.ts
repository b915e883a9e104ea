/**
 * Submitting NMDC `Database` JSON (`POST /metadata/json:submit`): validate the payload against the
 * schema and the store, keep it as a stored object, then apply it all or nothing. Records are
 * inserted, or replaced when their id exists, in ONE atomic write together with the object's record
 * and the run's record: on the embedded store the search index and the provenance edges are
 * written in that same transaction (store write hooks), on MongoDB the write is a transaction
 * (a replica set is needed) and the indexes catch up from the change log right after. A process
 * that dies during the write leaves nothing of the submission behind; a failure that can still be
 * reported records a failed run on its own. A large body's records are staged while it is read
 * (`stageWhileRead`, early-staging.ts), so the write begins at its last byte.
 */
import type { Logger } from 'pino';
import type { DocumentStore, Doc } from '../store/port.ts';
import type { Principal } from '../auth/index.ts';
import { keyedRecord } from '../store/record-keys.ts';
import { MetadataInvalid, SubmissionFailed } from '../errors.ts';
import {
  MetadataValidator,
  pythonText,
  validationAnswer,
  type ValidationOutcome,
} from '../validation/index.ts';
import { OBJECTS, objectRecord, type StoredObjects } from '../objects/stored-objects.ts';
import { RUNS, RunInProgress, runDoc, type CollectionCounts } from '../runs/runs.ts';
import { finishedRunWrites } from '../runs/run-events.ts';
import type { HeldWrites, PreparedWrite, PreparedWrites } from '../../search/writer.ts';
import { concatInTurns, nextTurn } from '../turns.ts';
import type { JsonObserver } from '../json-stream.ts';
import { StreamedWrites } from './early-staging.ts';

/** The original runs submissions as this workflow; runs keep its name. */
export const METADATA_IN_JOB = {
  id: 'metadata-in-1.0.0',
  description: 'Validate and apply a submitted NMDC Database JSON payload',
};

/** The part of RecordWriter a submission needs (search/writer.ts). */
export interface AtomicRecordWrites {
  upsertAll(
    writes: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>>; texts?: string[] }>,
  ): Promise<unknown>;
  upsert(collection: string, docs: Array<Doc | Record<string, unknown>>): Promise<unknown>;
  /**
   * Optional: records serialised, and index work started, ahead of `upsertAll` (RecordWriter.prepare),
   * the writes taken as they come.
   */
  prepare?(
    writes:
      | Iterable<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>
      | AsyncIterable<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>,
  ): PreparedWrites;
  /**
   * Optional: an `upsertAll` of prepared writes begun and held open until it is finished or
   * aborted, written as they come (RecordWriter.hold).
   */
  hold?(writes: AsyncIterable<PreparedWrite>, signal?: AbortSignal): Promise<HeldWrites | undefined>;
}

/** The payload's write, begun while the payload is validated (see `JsonSubmissions.holdAhead`). */
export interface WriteAhead {
  /** The held write, for the caller to end; undefined when none could be held. */
  take(): Promise<HeldWrites | undefined>;
  /** Rolls the held write back unless it was taken (a refused payload, a failure before the write). */
  abandon(): void;
}

/**
 * A submission's records staged while its body was read (`JsonSubmissions.stageWhileRead`), and
 * its write begun at the body's last byte.
 */
export interface EarlyStaging {
  /**
   * The staged writes and the write begun ahead, when `payload` is exactly what was staged;
   * otherwise it is all released and undefined is answered (the submission stages it again).
   */
  take(payload: Record<string, unknown>): { prepared: PreparedWrites; ahead: WriteAhead } | undefined;
  /** Releases what was staged and rolls back the write begun ahead, unless taken. */
  release(): void;
}

/**
 * Records per entry of the atomic write. One transaction either way; the store's index hooks
 * handle batches of this size (the loader's) faster than one batch of 10^5 records.
 */
const WRITE_BATCH = 2000;

/** Keys of a `Database` payload that are not collections. */
const NOT_COLLECTIONS = new Set(['@type']);

export class JsonSubmissions {
  private readonly validator: MetadataValidator;
  /** Submissions applied with the records staged while their bodies were read. */
  stagedWhileRead = 0;

  constructor(
    private readonly store: DocumentStore,
    private readonly writes: AtomicRecordWrites,
    private readonly objects: StoredObjects,
    private readonly logger: Logger,
  ) {
    this.validator = new MetadataValidator(store);
  }

  /**
   * Validates and applies `payload` for `principal`; answers the run's id. Throws 422 (with the
   * validation answer as detail) when the payload is invalid, before anything is written.
   */
  async submit(
    payload: Record<string, unknown>,
    principal: Principal,
    early?: EarlyStaging,
  ): Promise<{ run_id: string }> {
    const run = new RunInProgress(METADATA_IN_JOB, principal.subject);
    const staged = early?.take(payload);
    if (staged) this.stagedWhileRead++;
    // Index work that needs no database runs on worker threads while the payload is validated.
    const prepared = staged?.prepared ?? this.prepareAhead(payload);
    const ahead = staged?.ahead ?? this.holdAhead(prepared);
    try {
      return await this.validateAndApply(payload, principal, run, prepared, ahead);
    } finally {
      ahead.abandon();
      prepared?.release();
    }
  }

  /**
   * Begins the payload's write as soon as its first records are serialised (the others are
   * written as they are), while the payload is still validated, and holds it open
   * (`AtomicRecordWrites.hold`): no reader sees it, and a refused payload has it rolled back. On
   * the embedded store the writing thread writes it meanwhile, so the apply phase is left with the
   * run's records and the commit. Without a hold (another store, a small payload, a failure to
   * begin) the write is made after validation, as it is written here.
   */
  private holdAhead(prepared: PreparedWrites | undefined, begin?: Promise<void>): WriteAhead {
    let taken = false;
    const abandoning = new AbortController();
    const abandoned = abandoning.signal;
    const hold = this.writes.hold?.bind(this.writes);
    const holding = (async () => {
      if (!prepared || !hold) return undefined;
      // Begun with the first records serialised (not before `begin`); the others are written as they are.
      return hold(begin ? afterwards(begin, prepared.each, abandoned) : prepared.each, abandoned);
    })().catch((err: unknown) => {
      if (!abandoned.aborted)
        this.logger.warn(
          { err },
          'metadata submission: the write could not begin ahead; it is made after validation',
        );
      return undefined;
    });
    return {
      take: () => {
        taken = true;
        return holding;
      },
      abandon: () => {
        if (taken) return;
        // Stops a write still being written; one already held is rolled back below.
        abandoning.abort();
        void holding.then((held) =>
          held
            ?.abort()
            .catch((err: unknown) =>
              this.logger.error({ err }, 'metadata submission: could not roll back the write begun ahead'),
            ),
        );
      },
    };
  }

  /**
   * Stages a submission's records as its body is read: `observer` is told of them as they are
   * parsed (JsonReader.observe), and they are serialised and staged as they are; the write is begun
   * once the last byte is in (early-staging.ts). `staging` is for the route to `take` (or release).
   * Undefined when the writes cannot be prepared ahead.
   */
  stageWhileRead(): { observer: JsonObserver; staging: EarlyStaging } | undefined {
    if (!this.writes.prepare) return undefined;
    let state: 'staged' | 'taken' | 'released' = 'staged';
    let release = () => {};
    const streamed = new StreamedWrites(WRITE_BATCH, () => release());
    const prepared = this.writes.prepare(streamed);
    const ahead = this.holdAhead(prepared, streamed.allReceived());
    release = () => {
      if (state !== 'staged') return;
      state = 'released';
      // Stops a write still waiting or being written; one already held is rolled back.
      ahead.abandon();
      streamed.fail();
      prepared.release();
    };
    return {
      observer: streamed,
      staging: {
        take: (payload) => {
          if (state !== 'staged') return undefined;
          if (!streamed.matches(payloadCollections(payload))) {
            release();
            return undefined;
          }
          state = 'taken';
          return { prepared, ahead };
        },
        release: () => release(),
      },
    };
  }

  /** The payload's writes serialised with index work started (none: not records, or not supported). */
  private prepareAhead(payload: Record<string, unknown>): PreparedWrites | undefined {
    if (!this.writes.prepare) return undefined;
    try {
      return this.writes.prepare(batchesOf(recordsByCollection(payload)));
    } catch {
      return undefined; // not records: validation refuses the payload
    }
  }

  private async validateAndApply(
    payload: Record<string, unknown>,
    principal: Principal,
    run: RunInProgress,
    prepared: PreparedWrites | undefined,
    ahead: WriteAhead,
  ): Promise<{ run_id: string }> {
    // The records are serialised and handed to the writing thread first: its write is what a
    // large submission waits for, and validation would share this thread with the serialising,
    // turn by turn (the indexes' work ahead of a small one is not waited for).
    await prepared?.serialised;
    const outcome = await this.validator.validateDatabase(payload);
    if (!outcome.valid) throw validationRefusal(outcome);
    run.phaseDone('validate');

    try {
      // Prepared while the payload was validated (or, failing that, here).
      const writes =
        (await prepared?.ready.catch(() => undefined)) ?? batchesOf(recordsByCollection(payload));
      const content = await payloadBytes(payload, writes);
      const object = await this.objects.prepare({
        content,
        mimeType: 'application/json',
        description: `JSON metadata in (created by/for ${principal.subject} at ${run.record.started_at_time})`,
        createdBy: principal.subject,
      });
      run.record.object_id = object.id;
      run.record.inputs = [object.id];
      run.phaseDone('store_object');

      run.record.counts = await this.countsOf(writes);
      run.complete();
      this.logger.info(
        { run_id: run.record.id, object_id: object.id, records: totalRecords(writes) },
        'metadata submission: applying',
      );
      const rest = [
        { collection: OBJECTS, docs: [objectRecord(object)] },
        // The run's record with its STARTED and COMPLETE events.
        ...finishedRunWrites(run.record),
      ];
      // The payload's records were written ahead when they could be: the rest, then the commit.
      const held = await ahead.take();
      if (held) await held.finish(rest);
      else await this.writes.upsertAll([...writes, ...rest]);
      run.phaseDone('apply');
    } catch (err) {
      await this.recordFailure(run, err);
      throw new SubmissionFailed(
        `Runtime failed to apply ${METADATA_IN_JOB.id} run ${run.record.id}. Detail: ${messageOf(err)}`,
      );
    }

    // The run was committed with the submission; the time the write took is added after it.
    run.record.ended_at_time = new Date().toISOString();
    await this.writes.upsert(RUNS, [runDoc(run.record)]).catch((err: unknown) => {
      this.logger.warn(
        { err, run_id: run.record.id },
        'metadata submission: could not add apply timing to run',
      );
    });
    this.logger.info(
      { run_id: run.record.id, timings_ms: run.record.timings_ms },
      'metadata submission: applied',
    );
    return { run_id: run.record.id };
  }

  /** Records per collection as the store keeps them (with store keys where a collection has no ids). */
  private async countsOf(
    writes: Array<{ collection: string; docs: Doc[] }>,
  ): Promise<Record<string, CollectionCounts>> {
    const byCollection = new Map<string, Set<string>>();
    for (const { collection, docs } of writes) {
      let ids = byCollection.get(collection);
      if (!ids) byCollection.set(collection, (ids = new Set()));
      for (const d of docs) ids.add(d.id);
    }
    const counts: Record<string, CollectionCounts> = {};
    for (const [collection, unique] of byCollection) {
      const ids = [...unique];
      // Decided before the write; a concurrent writer of the same ids could shift the split.
      const replaced = await this.store.count(collection, {}, ids);
      counts[collection] = { inserted: ids.length - replaced, replaced };
    }
    return counts;
  }

  private async recordFailure(run: RunInProgress, err: unknown): Promise<void> {
    this.logger.error({ err, run_id: run.record.id }, 'metadata submission failed');
    run.record.counts = {};
    try {
      await this.writes.upsertAll(finishedRunWrites(run.fail(messageOf(err))));
    } catch (recordErr) {
      this.logger.error(
        { err: recordErr, run_id: run.record.id },
        'metadata submission: could not record failed run',
      );
    }
  }
}

/**
 * The 422 of a payload that does not validate. `detail` is the answer as the original sends it,
 * the Python text of `{'result': 'errors', 'detail': {...}}` (its clients look for collection and
 * slot names in it); `validation` is the same answer as JSON.
 */
export function validationRefusal(outcome: ValidationOutcome): MetadataInvalid {
  const answer = validationAnswer(outcome);
  return new MetadataInvalid(pythonText(answer), { validation: answer });
}

/** A `Database` payload's collections that hold records, in order, with their records as given. */
function payloadCollections(
  payload: Record<string, unknown>,
): Array<{ collection: string; records: unknown[] }> {
  const out: Array<{ collection: string; records: unknown[] }> = [];
  for (const [collection, records] of Object.entries(payload)) {
    if (NOT_COLLECTIONS.has(collection) || !Array.isArray(records) || records.length === 0) continue;
    out.push({ collection, records });
  }
  return out;
}

/** A `Database` payload's records per collection, keyed as the store keeps them. */
export function recordsByCollection(
  payload: Record<string, unknown>,
): Array<{ collection: string; docs: Doc[] }> {
  return payloadCollections(payload).map(({ collection, records }) => ({
    collection,
    docs: records.map((record) => keyedRecord(collection, record as Record<string, unknown>) as Doc),
  }));
}

/** The items of `items`, not before `begin` has settled, and none once `signal` is aborted by then. */
async function* afterwards<T>(
  begin: Promise<void>,
  items: AsyncIterable<T>,
  signal: AbortSignal,
): AsyncIterable<T> {
  await begin;
  if (signal.aborted) throw new Error('the write begun ahead was given up');
  yield* items;
}

/**
 * `JSON.stringify(payload)` (a parsed JSON body), with the text of each record already serialised
 * for the write (`writes` with texts, whose docs are the payload's own records) taken as it is
 * rather than serialised again: a collection's array is their texts joined. Arrays holding any
 * other record are serialised whole.
 */
export function payloadText(
  payload: Record<string, unknown>,
  writes: Array<{ docs: Doc[]; texts?: string[] }>,
): string {
  return [...payloadPieces(payload, writes)].join('');
}

/** Records' texts per piece of `payloadPieces`. */
const PIECE_RECORDS = 1000;

/** `payloadText` in pieces, in order: a collection's records come PIECE_RECORDS at a time. */
function* payloadPieces(
  payload: Record<string, unknown>,
  writes: Array<{ docs: Doc[]; texts?: string[] }>,
): Generator<string> {
  const textOf = new Map<unknown, string>();
  for (const { docs, texts } of writes) if (texts) docs.forEach((doc, i) => textOf.set(doc, texts[i]!));
  let separator = '';
  yield '{';
  for (const [key, value] of Object.entries(payload)) {
    if (Array.isArray(value) && value.length > 0 && value.every((record) => textOf.has(record))) {
      yield `${separator}${JSON.stringify(key)}:[`;
      for (let i = 0; i < value.length; i += PIECE_RECORDS) {
        const texts = value.slice(i, i + PIECE_RECORDS).map((record) => textOf.get(record)!);
        yield (i > 0 ? ',' : '') + texts.join(',');
      }
      yield ']';
    } else {
      const text = JSON.stringify(value);
      // As JSON.stringify: members whose value has no JSON text are left out.
      if (text === undefined) continue;
      yield `${separator}${JSON.stringify(key)}:${text}`;
    }
    separator = ',';
  }
  yield '}';
}

/**
 * `payloadText` as UTF-8, encoded a piece at a time with a turn of the event loop between pieces
 * (a payload of 10^5 records is over 100 MB). Pieces end between records, and JSON text holds no
 * lone surrogate, so the pieces' bytes are the whole text's.
 */
export async function payloadBytes(
  payload: Record<string, unknown>,
  writes: Array<{ docs: Doc[]; texts?: string[] }>,
): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const piece of payloadPieces(payload, writes)) {
    parts.push(Buffer.from(piece, 'utf8'));
    await nextTurn();
  }
  return concatInTurns(parts);
}
/** Records in entries of WRITE_BATCH for one atomic write. */
export function inBatches(docs: Doc[]): Doc[][] {
  const out: Doc[][] = [];
  for (let i = 0; i < docs.length; i += WRITE_BATCH) out.push(docs.slice(i, i + WRITE_BATCH));
  return out;
}

/** Each collection's records in entries of WRITE_BATCH. */
function batchesOf(
  collections: Array<{ collection: string; docs: Doc[] }>,
): Array<{ collection: string; docs: Doc[] }> {
  return collections.flatMap(({ collection, docs }) =>
    inBatches(docs).map((batch) => ({ collection, docs: batch })),
  );
}

function totalRecords(collections: Array<{ docs: Doc[] }>): number {
  return collections.reduce((n, c) => n + c.docs.length, 0);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
