/**
 * `POST /queries:run`: database commands in MongoDB's command shape. `find`, `getMore` and
 * `count` for every authenticated caller; `aggregate`, `update` and `delete` for holders of the
 * matching allowance (runtime administrators always), as in the original. Filters pass the same
 * guard as the public endpoints. Updates and deletes: see write-commands.ts.
 */
import type { AllowanceAction, Principal } from '../accounts/index.ts';
import { Forbidden, NotFound, Unprocessable } from '../errors.ts';
import { guardFilter } from '../query/guard/index.ts';
import { checkFieldPath } from '../query/guard/field-names.ts';
import type { Doc, Filter, Sort, StateStore } from '../store/port.ts';
import type { CollectionsReader, SortedPage } from './collections-reader.ts';
import { checkCollectionName } from './schema-endpoints.ts';
import {
  CONTINUATION_TTL_SECONDS,
  loadContinuation,
  newContinuationKey,
  saveContinuation,
} from './paging-state.ts';
import { AggregationRunner, checkPipeline, type StoredTexts } from './aggregation.ts';
import type { PipelineProcesses } from './pipeline-processes.ts';
import { shownRecord, shownStored } from '../store/record-keys.ts';
import { Turns } from '../turns.ts';
import { JsonText, RecordText, jsonTextOf, parsedRecord } from '../json-text.ts';
import type { WriteCommands, WriteOptions } from './write-commands.ts';
import { deleteStatementsOf, updateStatementsOf } from './write-statements.ts';

export type Command = Record<string, unknown>;

const DEFAULT_FIND_BATCH = 101;
const DEFAULT_AGGREGATE_BATCH = 25;
/**
 * The most JSON text a batch holds, whatever its batch size: MongoDB answers a command with one
 * document of at most 16 MiB, so a batch ends there and its cursor gives the rest (the original's
 * batches end there too). A batch holds at least one record. A find of 10^5 biosamples in one
 * batch was 281 MB of records, answered twice over (`batch` and `firstBatch`).
 */
export const BATCH_CHARS = 16 * 1024 * 1024;
/** Records a find's batch reads at first; then as many as the rest of BATCH_CHARS seems to hold. */
const FIRST_READ = 1000;
/** The most records one read of a batch parses at once. */
const MOST_READ = 10_000;
/** A batch of at least this much JSON text is kept as its records' texts, written as they are. */
const BATCH_AS_TEXTS_CHARS = 1024 * 1024;
interface QueryCursorState {
  owner: string;
  collection: string;
  filter: Filter;
  sort: Sort | null;
  projection: string[] | null;
  exclude: string[] | null;
  offset: number;
  lastId: string | null;
  /** Sort keys of the last record returned (keyset paging in sort order). */
  lastKeys?: unknown[] | null;
  /** Records still allowed by the command's `limit` (null: no limit). */
  remaining: number | null;
  /** The batch size the cursor was opened with: a `getMore` without its own keeps it (as the original). */
  batchSize: number;
  /** Aggregation results not yet returned (aggregate cursors saved by earlier versions). */
  pending?: Doc[];
  /** An aggregation's results, kept in chunks (`AggregateResults`); `offset` counts those returned. */
  results?: StoredResults;
}

/** The JSON text of the aggregation results per stored chunk, at least (chunks hold whole records). */
const RESULTS_CHUNK_CHARS = 1024 * 1024;
/**
 * Seconds an aggregation's stored results are kept: written once, they outlive the cursor's hour
 * of inactivity however long a client keeps paging them.
 */
const RESULTS_TTL_SECONDS = 4 * CONTINUATION_TTL_SECONDS['query-cursor'];

/**
 * The longest part of a result record's text kept in one chunk: a record may be 16 MiB of JSON, and
 * a value MongoDB keeps at most 16 MiB of BSON with its key and expiry.
 */
const RESULT_PART_CHARS = 4 * 1024 * 1024;

/**
 * Where an aggregation's stored results are: their key, count, and the first result of each chunk
 * (chunks that start at the same result hold its parts, in order).
 */
interface StoredResults {
  key: string;
  total: number;
  starts: number[];
}

/** A cursor's batch: records, or an aggregation's results as their JSON texts. */
type Batch = Array<Doc | JsonText>;

/**
 * An aggregation's results beyond its first batch, kept in the state store in chunks of about
 * RESULTS_CHUNK_CHARS written once, each result as its JSON text (neither parsed nor serialised
 * again here): a `getMore` reads the chunks its batch spans (each used to rewrite all the results
 * left, and the results of one run may be 64 MiB).
 */
class AggregateResults {
  constructor(private readonly state: StateStore) {}

  async save(results: JsonText[]): Promise<StoredResults> {
    const key = newContinuationKey();
    const starts: number[] = [];
    const turns = new Turns();
    const put = async (first: number, texts: string[]) => {
      starts.push(first);
      await this.state.put('query-results', `${key}.${starts.length - 1}`, texts, RESULTS_TTL_SECONDS);
      // Each chunk is written on the event loop (about 5 ms a megabyte).
      if (turns.due()) await turns.give();
    };
    let start = 0;
    let chars = 0;
    for (let i = 0; i < results.length; i++) {
      const { text } = results[i]!;
      if (text.length > RESULT_PART_CHARS) {
        // A record kept in parts, one chunk each, all starting at it.
        if (start < i)
          await put(
            start,
            results.slice(start, i).map((r) => r.text),
          );
        for (let at = 0; at < text.length; at += RESULT_PART_CHARS)
          await put(i, [text.slice(at, at + RESULT_PART_CHARS)]);
        start = i + 1;
        chars = 0;
        continue;
      }
      chars += text.length;
      if (chars >= RESULTS_CHUNK_CHARS) {
        await put(
          start,
          results.slice(start, i + 1).map((r) => r.text),
        );
        start = i + 1;
        chars = 0;
      }
    }
    if (start < results.length)
      await put(
        start,
        results.slice(start).map((r) => r.text),
      );
    return { key, total: results.length, starts };
  }

  /**
   * Results `from` (inclusive) to `to` (exclusive), the chunks read ending with the one that
   * passes BATCH_CHARS of text (a batch ends there).
   */
  async read({ key, total, starts }: StoredResults, from: number, to: number): Promise<Batch> {
    const out: Batch = [];
    let chars = 0;
    const kept = async (chunk: number) => {
      // Texts; chunks kept by earlier versions hold the records themselves.
      const found = await this.state.get<Array<string | Doc>>('query-results', `${key}.${chunk}`);
      if (!found)
        throw new NotFound('The results of this aggregation cursor have expired; run the aggregation again');
      return found;
    };
    const turns = new Turns();
    for (let chunk = 0; chunk < starts.length; chunk++) {
      // Each chunk is read and parsed on the event loop (a few ms a megabyte).
      if (turns.due()) await turns.give();
      const start = starts[chunk]!;
      // Chunks starting at the same record are its parts.
      let last = chunk;
      while (starts[last + 1] === start) last++;
      const end = starts[last + 1] ?? total;
      if (end > from && start < to) {
        if (last > chunk) {
          const parts: string[] = [];
          for (let c = chunk; c <= last; c++) parts.push((await kept(c))[0] as string);
          const text = parts.join('');
          out.push(new JsonText(text));
          chars += text.length;
        } else
          for (const r of (await kept(chunk)).slice(Math.max(0, from - start), to - start)) {
            out.push(typeof r === 'string' ? new JsonText(r) : r);
            chars += typeof r === 'string' ? r.length : 0;
          }
        if (chars > BATCH_CHARS) break;
      }
      chunk = last;
    }
    return out;
  }

  async forget({ key, starts }: StoredResults): Promise<void> {
    for (let chunk = 0; chunk < starts.length; chunk++)
      await this.state.delete('query-results', `${key}.${chunk}`);
  }
}

/** The first records of `batch` that fit in BATCH_CHARS of JSON text (at least one). */
function withinBatchChars<T extends Doc | JsonText>(batch: T[]): T[] {
  let chars = 0;
  for (let i = 0; i < batch.length; i++) {
    const element = batch[i]!;
    chars += jsonTextOf(element).length;
    if (i > 0 && chars > BATCH_CHARS) return batch.slice(0, i);
  }
  return batch;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function positiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) < 0)
    throw new Unprocessable(`${name} must be a non-negative integer`);
  return value as number;
}

/** Mongo projection document -> inclusion list or exclusion list (not both, as in MongoDB; `id` stays). */
function parseProjection(projection: unknown): { include: string[] | null; exclude: string[] | null } {
  if (projection === undefined || projection === null) return { include: null, exclude: null };
  if (!isObject(projection)) throw new Unprocessable('projection must be an object');
  const include: string[] = [];
  const exclude: string[] = [];
  for (const [field, flag] of Object.entries(projection)) {
    checkFieldPath(field);
    if (field === '_id') continue;
    if (flag === 1 || flag === true) include.push(field);
    else if (flag === 0 || flag === false) exclude.push(field);
    else throw new Unprocessable(`projection of ${field} must be 0 or 1`);
  }
  if (include.length && exclude.length)
    throw new Unprocessable('projection cannot mix inclusion and exclusion');
  if (exclude.includes('id')) throw new Unprocessable('projection cannot exclude id');
  return {
    include: include.length ? ['id', ...include.filter((f) => f !== 'id')] : null,
    exclude: exclude.length ? exclude : null,
  };
}

function parseSort(sort: unknown): Sort | null {
  if (sort === undefined || sort === null) return null;
  if (!isObject(sort)) throw new Unprocessable('sort must be an object of field: 1 or -1');
  return Object.entries(sort).map(([field, dir]) => {
    checkFieldPath(field);
    if (dir !== 1 && dir !== -1) throw new Unprocessable(`sort direction of ${field} must be 1 or -1`);
    return [field, dir] as [string, 1 | -1];
  });
}

function dropFields(doc: Doc, fields: string[]): Doc {
  const copy = structuredClone(doc);
  for (const path of fields) {
    const parts = path.split('.');
    let node: unknown = copy;
    for (const part of parts.slice(0, -1)) node = isObject(node) ? node[part] : undefined;
    if (isObject(node)) delete node[parts[parts.length - 1]!];
  }
  return copy;
}

/** Who may run which command beyond reading (the allowances). */
export interface CommandPermissions {
  permits(principal: Principal, action: AllowanceAction): Promise<boolean>;
}

/** The allowance each writing or aggregating command needs, and the original's refusal. */
const COMMAND_ALLOWANCES = {
  aggregate: {
    action: '/queries:run(query_cmd:AggregateCommand)',
    refusal: 'Only specific users are allowed to issue aggregate commands.',
  },
  // The original asks the same allowance of update as of delete.
  update: {
    action: '/queries:run(query_cmd:DeleteCommand)',
    refusal: 'Only specific users are allowed to issue update and delete commands.',
  },
  delete: {
    action: '/queries:run(query_cmd:DeleteCommand)',
    refusal: 'Only specific users are allowed to issue update and delete commands.',
  },
} as const satisfies Record<string, { action: AllowanceAction; refusal: string }>;

export class QueryCommands {
  private readonly aggregation: AggregationRunner;
  private readonly results: AggregateResults;

  constructor(
    private readonly reader: CollectionsReader,
    private readonly state: StateStore,
    private readonly writes: WriteCommands,
    private readonly databaseName: string,
    private readonly permissions: CommandPermissions,
    pipelines: PipelineProcesses,
    storedTexts?: StoredTexts,
  ) {
    this.aggregation = new AggregationRunner(reader, pipelines, storedTexts);
    this.results = new AggregateResults(state);
  }

  /**
   * A cursor answer: 2.13.0 clients read `batch`, 1.2.0 clients `firstBatch` or `nextBatch`; both
   * carry the same records.
   */
  private cursor(key: 'firstBatch' | 'nextBatch', batch: Batch, id: string | null, collection: string) {
    return { ok: 1, cursor: { [key]: batch, batch, id, ns: `${this.databaseName}.${collection}` } };
  }

  private async requireAllowance(principal: Principal, command: keyof typeof COMMAND_ALLOWANCES) {
    const { action, refusal } = COMMAND_ALLOWANCES[command];
    if (!(await this.permissions.permits(principal, action))) throw new Forbidden(refusal);
  }

  async run(
    command: Command,
    principal: Principal,
    options: WriteOptions = { allowBrokenRefs: false },
  ): Promise<Record<string, unknown>> {
    if ('explain' in command) return this.explain(command);
    if ('find' in command) return this.find(command, principal);
    if ('getMore' in command) return this.getMore(command, principal);
    if ('count' in command) return this.count(command);
    if ('aggregate' in command) return this.aggregate(command, principal);
    if ('update' in command) return this.update(command, principal, options);
    if ('delete' in command) return this.delete(command, principal, options);
    throw new Unprocessable(
      'The command must be one of find, getMore, count, aggregate, update, delete, explain',
    );
  }

  /**
   * The most records the command's answer holds: its batch size (a getMore without one keeps its
   * cursor's), or 0 for a command that answers no batch. Read before the command runs, to decide
   * whether it waits for a slot of the large answers (large-answers.ts).
   */
  async batchAsked(command: Command, principal: Principal): Promise<number> {
    const size = (value: unknown, fallback: number) =>
      Number.isInteger(value) && (value as number) > 0 ? (value as number) : fallback;
    if ('find' in command) {
      const batch = size(command.batchSize, DEFAULT_FIND_BATCH);
      return Number.isInteger(command.limit) && (command.limit as number) > 0
        ? Math.min(batch, command.limit as number)
        : batch;
    }
    if ('aggregate' in command) {
      const cursor = command.cursor as { batchSize?: unknown } | undefined;
      return size(cursor?.batchSize, DEFAULT_AGGREGATE_BATCH);
    }
    if (!('getMore' in command)) return 0;
    if (command.batchSize !== undefined) return size(command.batchSize, DEFAULT_FIND_BATCH);
    if (typeof command.getMore !== 'string') return 0;
    const state = await loadContinuation<QueryCursorState>(this.state, 'query-cursor', command.getMore);
    return state && state.owner === principal.subject ? (state.batchSize ?? DEFAULT_FIND_BATCH) : 0;
  }

  private collectionOf(command: Command, key: string): string {
    const collection = command[key];
    if (typeof collection !== 'string') throw new Unprocessable(`${key} must name a collection`);
    checkCollectionName(collection);
    return collection;
  }

  private async find(command: Command, principal: Principal) {
    const collection = this.collectionOf(command, 'find');
    const filter = guardFilter(command.filter ?? {});
    const { include, exclude } = parseProjection(command.projection);
    const limit = positiveInt(command.limit, 'limit', 0);
    const batchSize = positiveInt(command.batchSize, 'batchSize', DEFAULT_FIND_BATCH);
    const state: QueryCursorState = {
      owner: principal.subject,
      collection,
      filter,
      sort: parseSort(command.sort),
      projection: include,
      exclude,
      offset: 0,
      lastId: null,
      remaining: limit > 0 ? limit : null,
      batchSize,
    };
    const { batch, id } = await this.nextBatch(state, batchSize);
    return this.cursor('firstBatch', batch, id, collection);
  }

  private async getMore(command: Command, principal: Principal) {
    const key = command.getMore;
    if (typeof key !== 'string') throw new Unprocessable('getMore must be a cursor id string');
    const state = await loadContinuation<QueryCursorState>(this.state, 'query-cursor', key);
    if (!state || state.owner !== principal.subject)
      throw new NotFound(`Cursor ${key} not found (cursors expire after an hour of inactivity)`);
    // Without a batch size of its own, a getMore keeps the cursor's (cursors saved before batch
    // sizes were kept fall back to the find default).
    const batchSize = positiveInt(command.batchSize, 'batchSize', state.batchSize ?? DEFAULT_FIND_BATCH);
    const { batch, id } = await this.nextBatch(state, batchSize);
    await this.state.delete('query-cursor', key);
    return this.cursor('nextBatch', batch, id, state.collection);
  }

  private async nextBatch(
    state: QueryCursorState,
    batchSize: number,
  ): Promise<{ batch: Batch; id: string | null }> {
    const size = batchSize === 0 ? DEFAULT_FIND_BATCH : batchSize;
    const want = state.remaining === null ? size : Math.min(size, state.remaining);
    let batch: Batch;
    let more: boolean;
    let lastKeys: unknown[] | null = null;
    if (state.results) {
      const { total } = state.results;
      batch = withinBatchChars(
        await this.results.read(state.results, state.offset, Math.min(total, state.offset + want)),
      );
      more = state.offset + batch.length < total;
      if (!more) await this.results.forget(state.results).catch(() => undefined);
    } else if (state.pending) {
      batch = withinBatchChars(state.pending.slice(0, want));
      more = state.pending.length > batch.length;
      state = { ...state, pending: state.pending.slice(batch.length) };
    } else {
      let lastId: string | null;
      ({ batch, more, lastKeys, lastId } = await this.readBatch(state, want));
      state = { ...state, lastId };
    }
    const remaining = state.remaining === null ? null : state.remaining - batch.length;
    if (!more || remaining === 0 || batch.length === 0) return { batch, id: null };
    const id = await saveContinuation<QueryCursorState>(this.state, 'query-cursor', {
      ...state,
      offset: state.offset + batch.length,
      lastKeys,
      remaining,
    });
    return { batch, id };
  }

  /**
   * Up to `want` records of a find's cursor as answers show them, read in steps and ending at
   * BATCH_CHARS of JSON text (so a batch of 10^5 is neither read nor parsed at once); with whether
   * more follow and where the next batch starts. A large batch is its records' texts.
   */
  private async readBatch(
    state: QueryCursorState,
    want: number,
  ): Promise<{ batch: Batch; more: boolean; lastKeys: unknown[] | null; lastId: string | null }> {
    const docs: Array<Doc | RecordText> = [];
    const texts: string[] = [];
    let chars = 0;
    let lastKeys = state.lastKeys ?? null;
    // The page and index of the last record taken: its sort keys are taken when the next read or
    // the answer needs them (a record that came as its stored text is parsed for them, once).
    let lastPage: SortedPage<Doc | RecordText> | undefined;
    let lastIndex = 0;
    const keysOfLast = () => {
      if (lastPage) lastKeys = lastPage.keyAt?.(lastIndex) ?? null;
      lastPage = undefined;
      return lastKeys;
    };
    let lastId = state.lastId;
    let step = Math.min(want, FIRST_READ);
    const turns = new Turns();
    const answer = (more: boolean) => ({
      batch: chars >= BATCH_AS_TEXTS_CHARS ? texts.map((t) => new JsonText(t)) : docs,
      more,
      lastKeys: keysOfLast(),
      lastId,
    });
    for (;;) {
      const found = await this.reader.findSorted(
        [state.collection],
        state.filter,
        {
          sort: state.sort ?? undefined,
          projection: state.projection ?? undefined,
          ...(state.sort
            ? { skip: state.offset + docs.length, after: keysOfLast() ?? undefined }
            : { afterId: lastId ?? undefined }),
          limit: step + 1,
        },
        true,
      );
      const taking = Math.min(step, found.docs.length);
      for (let i = 0; i < taking; i++) {
        if (turns.due()) await turns.give();
        const stored = found.docs[i]!;
        const doc = state.exclude
          ? shownRecord(state.collection, dropFields(parsedRecord(stored), state.exclude))
          : shownStored(state.collection, stored);
        const text = jsonTextOf(doc);
        if (docs.length > 0 && chars + text.length > BATCH_CHARS) return answer(true);
        docs.push(doc);
        texts.push(text);
        chars += text.length;
        lastPage = found;
        lastIndex = i;
        lastId = stored.id ?? null;
      }
      if (found.docs.length <= step) return answer(false);
      if (docs.length >= want) return answer(true);
      const perRecord = chars / docs.length;
      step = Math.min(want - docs.length, MOST_READ, Math.ceil((BATCH_CHARS - chars) / perRecord) + 1);
    }
  }

  /** MongoDB's explain of a find or count: the planner's chosen and rejected paths. */
  private async explain(command: Command) {
    const inner = command.explain;
    if (!isObject(inner) || !('find' in inner || 'count' in inner))
      throw new Unprocessable(
        'explain must hold a find or count command, e.g. {"explain": {"find": "study_set"}}',
      );
    const verbosity = command.verbosity ?? 'queryPlanner';
    if (verbosity !== 'queryPlanner' && verbosity !== 'executionStats')
      throw new Unprocessable('verbosity must be queryPlanner or executionStats');
    let answer: Record<string, unknown>;
    if ('find' in inner) {
      const collection = this.collectionOf(inner, 'find');
      const limit = positiveInt(inner.limit, 'limit', 0);
      positiveInt(inner.batchSize, 'batchSize', DEFAULT_FIND_BATCH);
      const sort = parseSort(inner.sort);
      answer = await this.reader.explain(
        collection,
        guardFilter(inner.filter ?? {}),
        {
          sort: sort ?? undefined,
          projection: parseProjection(inner.projection).include ?? undefined,
          // The whole query, as MongoDB explains a find (batches are a cursor's, not the query's).
          limit: limit > 0 ? limit : undefined,
        },
        'page',
        verbosity,
        this.databaseName,
      );
    } else {
      const collection = this.collectionOf(inner, 'count');
      answer = await this.reader.explain(
        collection,
        guardFilter(inner.query ?? {}),
        {},
        'count',
        verbosity,
        this.databaseName,
      );
    }
    return { ...answer, ok: 1 };
  }

  private async count(command: Command) {
    const collection = this.collectionOf(command, 'count');
    const n = await this.reader.count([collection], guardFilter(command.query ?? {}));
    return { ok: 1, n };
  }

  private async aggregate(command: Command, principal: Principal) {
    await this.requireAllowance(principal, 'aggregate');
    const collection = this.collectionOf(command, 'aggregate');
    const results = await this.aggregation.run(collection, checkPipeline(command.pipeline));
    const cursorOptions = isObject(command.cursor) ? command.cursor : {};
    const batchSize = positiveInt(cursorOptions.batchSize, 'cursor.batchSize', DEFAULT_AGGREGATE_BATCH);
    const first = withinBatchChars(results.slice(0, batchSize === 0 ? DEFAULT_FIND_BATCH : batchSize));
    if (first.length === results.length) return this.cursor('firstBatch', first, null, collection);
    const state: QueryCursorState = {
      owner: principal.subject,
      collection,
      filter: {},
      sort: null,
      projection: null,
      exclude: null,
      offset: first.length,
      lastId: null,
      remaining: null,
      batchSize,
      results: await this.results.save(results),
    };
    const id = await saveContinuation<QueryCursorState>(this.state, 'query-cursor', state);
    return this.cursor('firstBatch', first, id, collection);
  }

  private async update(command: Command, principal: Principal, options: WriteOptions) {
    await this.requireAllowance(principal, 'update');
    const collection = this.collectionOf(command, 'update');
    return this.writes.update(collection, await updateStatementsOf(command), options);
  }

  private async delete(command: Command, principal: Principal, options: WriteOptions) {
    await this.requireAllowance(principal, 'delete');
    const collection = this.collectionOf(command, 'delete');
    return this.writes.delete(collection, await deleteStatementsOf(command), options);
  }
}
