/**
 * `POST /queries:run`: database commands in MongoDB's command shape. `find`, `getMore` and
 * `count` for every authenticated caller; `aggregate`, `update` and `delete` for holders of the
 * matching allowance (runtime administrators always), as in the original. Filters pass the same
 * guard as the public endpoints.
 */
// Updates run on mingo with their regular expressions (`$pull` conditions) on the linear-time engine.
import { applyLinearUpdate as applyUpdate } from './pipeline-engine.ts';
import type { AllowanceAction, Principal } from '../accounts/index.ts';
import { BadRequest, Forbidden, NotFound, Unprocessable } from '../http/errors.ts';
import { guardFilter } from '../query/guard/index.ts';
import { checkFieldPath } from '../query/guard/field-names.ts';
import type { Doc, Filter, Sort, StateStore } from '../store/port.ts';
import type { CollectionsReader } from './collections-reader.ts';
import { checkCollectionName } from './schema-endpoints.ts';
import { loadContinuation, saveContinuation } from './paging-state.ts';
import { AggregationRunner, checkPipeline } from './aggregation.ts';
import { shownRecord } from '../store/record-keys.ts';

/** Writes that keep the search index in step with the source of truth. */
export interface RecordWrites {
  upsert(collection: string, docs: Doc[]): Promise<unknown>;
  delete(collection: string, filter: Filter, limit?: number): Promise<string[]>;
}

export type Command = Record<string, unknown>;

const DEFAULT_FIND_BATCH = 101;
const DEFAULT_AGGREGATE_BATCH = 25;
interface QueryCursorState {
  owner: string;
  collection: string;
  filter: Filter;
  sort: Sort | null;
  projection: string[] | null;
  exclude: string[] | null;
  offset: number;
  lastId: string | null;
  /** Records still allowed by the command's `limit` (null: no limit). */
  remaining: number | null;
  /** Aggregation results not yet returned (aggregate cursors only). */
  pending?: Doc[];
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

  constructor(
    private readonly reader: CollectionsReader,
    private readonly state: StateStore,
    private readonly writes: RecordWrites,
    private readonly databaseName: string,
    private readonly permissions: CommandPermissions,
  ) {
    this.aggregation = new AggregationRunner(reader);
  }

  /**
   * A cursor answer: 2.13.0 clients read `batch`, 1.2.0 clients `firstBatch` or `nextBatch`; both
   * carry the same records.
   */
  private cursor(key: 'firstBatch' | 'nextBatch', batch: Doc[], id: string | null, collection: string) {
    return { ok: 1, cursor: { [key]: batch, batch, id, ns: `${this.databaseName}.${collection}` } };
  }

  /** A find's batch as answers show records (without the store keys of collections that have no ids). */
  private shown(collection: string, batch: Doc[]): Doc[] {
    return batch.map((doc) => shownRecord(collection, doc));
  }

  private async requireAllowance(principal: Principal, command: keyof typeof COMMAND_ALLOWANCES) {
    const { action, refusal } = COMMAND_ALLOWANCES[command];
    if (!(await this.permissions.permits(principal, action))) throw new Forbidden(refusal);
  }

  async run(command: Command, principal: Principal): Promise<Record<string, unknown>> {
    if ('explain' in command) return this.explain(command);
    if ('find' in command) return this.find(command, principal);
    if ('getMore' in command) return this.getMore(command, principal);
    if ('count' in command) return this.count(command);
    if ('aggregate' in command) return this.aggregate(command, principal);
    if ('update' in command) return this.update(command, principal);
    if ('delete' in command) return this.delete(command, principal);
    throw new Unprocessable(
      'The command must be one of find, getMore, count, aggregate, update, delete, explain',
    );
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
    };
    const batchSize = positiveInt(command.batchSize, 'batchSize', DEFAULT_FIND_BATCH);
    const { batch, id } = await this.nextBatch(state, batchSize);
    return this.cursor('firstBatch', this.shown(collection, batch), id, collection);
  }

  private async getMore(command: Command, principal: Principal) {
    const key = command.getMore;
    if (typeof key !== 'string') throw new Unprocessable('getMore must be a cursor id string');
    const state = await loadContinuation<QueryCursorState>(this.state, 'query-cursor', key);
    if (!state || state.owner !== principal.subject)
      throw new NotFound(`Cursor ${key} not found (cursors expire after an hour of inactivity)`);
    const batchSize = positiveInt(command.batchSize, 'batchSize', DEFAULT_FIND_BATCH);
    const { batch, id } = await this.nextBatch(state, batchSize);
    await this.state.delete('query-cursor', key);
    const shown = state.pending ? batch : this.shown(state.collection, batch);
    return this.cursor('nextBatch', shown, id, state.collection);
  }

  private async nextBatch(
    state: QueryCursorState,
    batchSize: number,
  ): Promise<{ batch: Doc[]; id: string | null }> {
    const size = batchSize === 0 ? DEFAULT_FIND_BATCH : batchSize;
    const want = state.remaining === null ? size : Math.min(size, state.remaining);
    let batch: Doc[];
    let more: boolean;
    if (state.pending) {
      batch = state.pending.slice(0, want);
      more = state.pending.length > want;
      state = { ...state, pending: state.pending.slice(want) };
    } else {
      const found = await this.reader.find([state.collection], state.filter, {
        sort: state.sort ?? undefined,
        projection: state.projection ?? undefined,
        ...(state.sort ? { skip: state.offset } : { afterId: state.lastId ?? undefined }),
        limit: want + 1,
      });
      batch = found.slice(0, want);
      more = found.length > want;
      if (state.exclude) batch = batch.map((d) => dropFields(d, state.exclude!));
    }
    const remaining = state.remaining === null ? null : state.remaining - batch.length;
    if (!more || remaining === 0 || batch.length === 0) return { batch, id: null };
    const id = await saveContinuation<QueryCursorState>(this.state, 'query-cursor', {
      ...state,
      offset: state.offset + batch.length,
      lastId: batch[batch.length - 1]!.id,
      remaining,
    });
    return { batch, id };
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
      const batchSize = positiveInt(inner.batchSize, 'batchSize', DEFAULT_FIND_BATCH) || DEFAULT_FIND_BATCH;
      const sort = parseSort(inner.sort);
      answer = await this.reader.explain(
        collection,
        guardFilter(inner.filter ?? {}),
        {
          sort: sort ?? undefined,
          projection: parseProjection(inner.projection).include ?? undefined,
          // The first batch, as the find would read it (one more to know whether more follow).
          limit: (limit > 0 ? Math.min(limit, batchSize) : batchSize) + 1,
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
    const state: QueryCursorState = {
      owner: principal.subject,
      collection,
      filter: {},
      sort: null,
      projection: null,
      exclude: null,
      offset: 0,
      lastId: null,
      remaining: null,
      pending: results,
    };
    const { batch, id } = await this.nextBatch(state, batchSize);
    return this.cursor('firstBatch', batch, id, collection);
  }

  private async update(command: Command, principal: Principal) {
    await this.requireAllowance(principal, 'update');
    const collection = this.collectionOf(command, 'update');
    if (!Array.isArray(command.updates)) throw new Unprocessable('updates must be an array');
    let n = 0;
    let nModified = 0;
    const upserted: Array<{ index: number; id: string }> = [];
    for (const [index, spec] of command.updates.entries()) {
      if (!isObject(spec) || !isObject(spec.u))
        throw new Unprocessable(`updates[${index}] needs q and u objects`);
      const filter = guardFilter(spec.q ?? {});
      const u = spec.u;
      const isModifier = Object.keys(u).some((k) => k.startsWith('$'));
      for (const key of Object.keys(u)) {
        if (isModifier && !key.startsWith('$'))
          throw new Unprocessable(`updates[${index}].u mixes operators and fields`);
        const fields = isModifier && isObject(u[key]) ? Object.keys(u[key] as object) : [key];
        fields.forEach(checkFieldPath);
        if (isModifier && fields.includes('id')) throw new Unprocessable('An update cannot change id');
      }
      const matches = await this.reader.find([collection], filter, { limit: spec.multi ? undefined : 1 });
      n += matches.length;
      const changed: Doc[] = [];
      for (const doc of matches) {
        let next: Doc;
        if (isModifier) {
          next = structuredClone(doc);
          try {
            if (applyUpdate(next, u as never).length === 0) continue;
          } catch (err) {
            throw new Unprocessable(`updates[${index}]: ${(err as Error).message}`);
          }
        } else {
          if (u.id !== undefined && u.id !== doc.id)
            throw new Unprocessable('A replacement cannot change id');
          next = { ...(u as Record<string, unknown>), id: doc.id };
        }
        changed.push(next);
      }
      if (matches.length === 0 && spec.upsert) {
        const base = Object.fromEntries(
          Object.entries(filter).filter(([k, v]) => !k.startsWith('$') && !isObject(v)),
        );
        const doc = { ...base } as Doc;
        if (isModifier) applyUpdate(doc, u as never);
        else Object.assign(doc, u);
        if (typeof doc.id !== 'string')
          throw new BadRequest(`updates[${index}]: an upsert must give the record an id`);
        changed.push(doc);
        upserted.push({ index, id: doc.id });
      }
      if (changed.length) await this.writes.upsert(collection, changed);
      nModified += changed.length - (matches.length === 0 && spec.upsert ? 1 : 0);
    }
    return { ok: 1, n: n + upserted.length, nModified, ...(upserted.length ? { upserted } : {}) };
  }

  private async delete(command: Command, principal: Principal) {
    await this.requireAllowance(principal, 'delete');
    const collection = this.collectionOf(command, 'delete');
    if (!Array.isArray(command.deletes)) throw new Unprocessable('deletes must be an array');
    let n = 0;
    for (const [index, spec] of command.deletes.entries()) {
      if (!isObject(spec)) throw new Unprocessable(`deletes[${index}] must be an object with q and limit`);
      const limit = positiveInt(spec.limit, `deletes[${index}].limit`, 0);
      if (limit > 1) throw new Unprocessable(`deletes[${index}].limit must be 0 (all) or 1`);
      const deleted = await this.writes.delete(collection, guardFilter(spec.q ?? {}), limit || undefined);
      n += deleted.length;
    }
    return { ok: 1, n };
  }
}
