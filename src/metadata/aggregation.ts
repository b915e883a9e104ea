/**
 * Aggregation pipelines of `POST /queries:run` as MongoDB runs them, over records read through the
 * planner: a leading `$match` is answered by the indexes, the other stages by mingo, and each
 * top-level `$lookup` reads only the foreign records it can join (by `$in` on the foreign field)
 * before mingo joins them. In a pipeline every record carries `_id`, equal to its `id`, as every
 * MongoDB document has one (pipelines group on it); records of collections without ids have only
 * `_id`, their store key.
 */
import { Unprocessable } from '../errors.ts';
import { guardFilter } from '../query/guard/index.ts';
import { isCollectionName, UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import { JsonText } from '../json-text.ts';
import { Turns } from '../turns.ts';
import type { Doc, Filter } from '../store/port.ts';
import type { CollectionsReader } from './collections-reader.ts';
import { shownRecord } from '../store/record-keys.ts';
import type { PipelineProcesses } from './pipeline-processes.ts';

export type Stage = Record<string, unknown>;

/** A `$lookup` without `localField`/`foreignField` reads the whole foreign collection, up to this many records. */
export const LOOKUP_COLLECTION_LIMIT = 50_000;

/**
 * Records a pipeline may read from its collection (after a leading `$match`): they are held in the
 * service's memory while the pipeline runs (10^5 biosamples are about 500 MiB of it).
 */
export const AGGREGATE_RECORD_LIMIT = 100_000;

/**
 * Records a `$lookup` stage may join in all: the joined records of every record, counted once per
 * record they join (each is a copy in the stage's output).
 */
export const LOOKUP_JOIN_LIMIT = 1_000_000;

/** Stages an administrator's pipeline may use: no writes ($out, $merge) and no code execution. */
const ALLOWED_STAGES = new Set([
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$sort',
  '$limit',
  '$skip',
  '$group',
  '$count',
  '$unwind',
  '$sortByCount',
  '$replaceRoot',
  '$replaceWith',
  '$bucket',
  '$facet',
  '$sample',
  '$lookup',
]);
/** Never inside a stage: code execution, and joins anywhere but as a top-level `$lookup` stage. */
const FORBIDDEN_EXPRESSIONS = new Set([
  '$function',
  '$accumulator',
  '$where',
  '$lookup',
  '$graphLookup',
  '$unionWith',
]);
const LOOKUP_KEYS = new Set(['from', 'localField', 'foreignField', 'let', 'pipeline', 'as']);

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function walkForForbidden(value: unknown): void {
  if (Array.isArray(value)) value.forEach(walkForForbidden);
  else if (isObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (FORBIDDEN_EXPRESSIONS.has(key)) {
        throw new Unprocessable(
          key === '$lookup'
            ? '$lookup is allowed only as a stage of the top-level pipeline'
            : `${key} is not allowed in a pipeline`,
        );
      }
      if (key === '__proto__' || key === 'constructor' || key === 'prototype')
        throw new Unprocessable(`"${key}" is not allowed in a pipeline`);
      walkForForbidden(inner);
    }
  }
}

function checkLookup(spec: unknown, at: string): void {
  if (!isObject(spec)) throw new Unprocessable(`${at}.$lookup must be an object`);
  for (const key of Object.keys(spec))
    if (!LOOKUP_KEYS.has(key)) throw new Unprocessable(`${at}.$lookup does not take "${key}"`);
  if (typeof spec.from !== 'string') throw new Unprocessable(`${at}.$lookup.from must name a collection`);
  if (typeof spec.as !== 'string' || spec.as === '')
    throw new Unprocessable(`${at}.$lookup.as must name a field`);
  const local = spec.localField;
  const foreign = spec.foreignField;
  if ((local === undefined) !== (foreign === undefined))
    throw new Unprocessable(`${at}.$lookup needs both localField and foreignField, or neither`);
  if (local !== undefined && (typeof local !== 'string' || typeof foreign !== 'string'))
    throw new Unprocessable(`${at}.$lookup.localField and foreignField must be field paths`);
  if (local === undefined && spec.pipeline === undefined)
    throw new Unprocessable(`${at}.$lookup needs localField and foreignField, or a pipeline`);
  if (spec.let !== undefined && !isObject(spec.let))
    throw new Unprocessable(`${at}.$lookup.let must be an object`);
  walkForForbidden(spec.let);
  if (spec.pipeline !== undefined)
    checkPipeline(spec.pipeline, { nested: true, at: `${at}.$lookup.pipeline` });
}

/** Checks a pipeline's stages before anything runs; throws 422 naming the first problem. */
export function checkPipeline(pipeline: unknown, options: { nested?: boolean; at?: string } = {}): Stage[] {
  const at = options.at ?? 'pipeline';
  if (!Array.isArray(pipeline)) throw new Unprocessable(`${at} must be an array of stages`);
  return pipeline.map((stage, i) => {
    if (!isObject(stage) || Object.keys(stage).length !== 1)
      throw new Unprocessable(`${at}[${i}] must be an object with one stage`);
    const name = Object.keys(stage)[0]!;
    if (name === '$out' || name === '$merge')
      throw new Unprocessable(`${name} is not allowed: queries cannot write through aggregate`);
    if (!ALLOWED_STAGES.has(name))
      throw new Unprocessable(
        `Stage ${name} is not allowed; allowed stages: ${[...ALLOWED_STAGES].join(', ')}`,
      );
    if (name === '$lookup') {
      if (options.nested)
        throw new Unprocessable('$lookup is allowed only as a stage of the top-level pipeline');
      checkLookup(stage.$lookup, `${at}[${i}]`);
    } else {
      if (name === '$match') guardFilter(stage.$match, { expressions: true });
      walkForForbidden(stage);
    }
    return stage;
  });
}

/** A filter the stores evaluate as it is: no aggregation expressions. */
function isPlainFilter(filter: unknown): boolean {
  try {
    guardFilter(filter);
    return true;
  } catch {
    return false;
  }
}

/** A record as a pipeline sees it: with `_id`; a record of a collection without ids has only `_id`. */
function asPipelineDocument(collection: string): (doc: Doc) => Doc {
  return (doc) => {
    const shown = shownRecord(collection, doc);
    return { _id: doc.id, ...shown } as Doc;
  };
}

function tooManyRecords(collection: string): Unprocessable {
  return new Unprocessable(
    `The pipeline would read more than ${AGGREGATE_RECORD_LIMIT} records of ${collection}; ` +
      'begin it with a $match that narrows them (a leading $match is answered by the indexes)',
  );
}

/** Refuses a `$lookup` that would join more than LOOKUP_JOIN_LIMIT records in all. */
function checkJoin(joined: number): void {
  if (joined > LOOKUP_JOIN_LIMIT)
    throw new Unprocessable(
      `$lookup would join ${joined} records in all, more than the ${LOOKUP_JOIN_LIMIT} one may; ` +
        'narrow the records before it (a $match) or the records it joins (localField and foreignField)',
    );
}

/** Every value at a dotted path, arrays flattened, as `$lookup` compares them; `null` when there is none. */
function valuesAt(doc: unknown, path: string[]): unknown[] {
  if (path.length === 0) return Array.isArray(doc) ? doc : [doc];
  if (Array.isArray(doc)) return doc.flatMap((el) => valuesAt(el, path));
  if (!isObject(doc) || !(path[0]! in doc)) return [];
  return valuesAt(doc[path[0]!], path.slice(1));
}

/** A collection's records as the store keeps them (JSON text), in id order, when the store can. */
export type StoredTexts = (collection: string) => AsyncIterable<string[]> | undefined;

/** Records as their JSON texts, serialised in turns. */
async function textsOf(docs: Doc[]): Promise<JsonText[]> {
  const texts: JsonText[] = [];
  const turns = new Turns();
  for (const doc of docs) {
    texts.push(new JsonText(JSON.stringify(doc)));
    if (turns.due()) await turns.give();
  }
  return texts;
}

export class AggregationRunner {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly processes: PipelineProcesses,
    private readonly storedTexts?: StoredTexts,
  ) {}

  /**
   * Every record of `collection` as stored, in id order, when the store gives them so: read as
   * they are sent to the pipeline process, neither parsed nor serialised again here (at 10^5
   * biosamples, 2 s of this process's CPU), nor gathered first (280 MB of text, and as much again
   * waiting in the channel to the process). Reading past AGGREGATE_RECORD_LIMIT records throws.
   */
  private stored(collection: string): AsyncIterable<string[]> | undefined {
    if (UNIDENTIFIED_COLLECTIONS.has(collection)) return undefined;
    const scan = this.storedTexts?.(collection);
    if (!scan) return undefined;
    return (async function* counted() {
      let read = 0;
      for await (const batch of scan) {
        read += batch.length;
        if (read > AGGREGATE_RECORD_LIMIT) throw tooManyRecords(collection);
        yield batch;
      }
    })();
  }

  /** Stages over records, in a pipeline process (pipeline-processes.ts). */
  private async runStages(stages: Stage[], docs: Doc[]): Promise<Doc[]> {
    if (stages.length === 0) return docs;
    return (await this.processes.run([{ stages, docs }]))[0]!;
  }

  /**
   * The pipeline's results, each as its JSON text: the final stages' come from their process as
   * text and are answered as they are.
   */
  async run(collection: string, pipeline: Stage[]): Promise<JsonText[]> {
    // A leading $match is answered by the planner (indexes) when it is a plain filter; the rest,
    // and a $match with aggregation expressions, runs on the matches.
    const first = pipeline[0];
    const leading =
      first && '$match' in first && isPlainFilter(first.$match) ? (first.$match as Filter) : undefined;
    const stages = leading ? pipeline.slice(1) : pipeline;
    // The whole collection, and a first stage that runs in the pipeline process: stored texts.
    let stored =
      !leading && stages.length > 0 && !('$lookup' in stages[0]!) ? this.stored(collection) : undefined;
    let docs: Doc[] = [];
    if (!stored) {
      const read = await this.reader.find([collection], leading ?? {}, { limit: AGGREGATE_RECORD_LIMIT + 1 });
      if (read.length > AGGREGATE_RECORD_LIMIT) throw tooManyRecords(collection);
      docs = read.map(asPipelineDocument(collection));
    }
    const runPending = async (pending: Stage[]): Promise<Doc[]> => {
      if (!stored) return this.runStages(pending, docs);
      const [out] = await this.processes.run([{ stages: pending, docs: [], stored }]);
      stored = undefined;
      return out!;
    };
    let pending: Stage[] = [];
    // The pipeline processes run every regular expression on the linear-time engine.
    for (const stage of stages) {
      if (!('$lookup' in stage)) {
        pending.push(stage);
        continue;
      }
      docs = await runPending(pending);
      pending = [];
      docs = await this.lookup(docs, stage.$lookup as Record<string, any>);
    }
    if (pending.length === 0) return textsOf(docs);
    const [out] = await this.processes.runTexts([
      stored ? { stages: pending, docs: [], stored } : { stages: pending, docs },
    ]);
    return out!;
  }

  private async lookup(docs: Doc[], spec: Record<string, any>): Promise<Doc[]> {
    const { from, localField, foreignField } = spec as {
      from: string;
      localField?: string;
      foreignField?: string;
    };
    if (localField === undefined || foreignField === undefined) {
      // Only a pipeline: every foreign record is a candidate for every record.
      const foreign = await this.readForeign(from, {}, true);
      checkJoin(docs.length * foreign.length);
      return this.runStages([{ $lookup: { ...spec, from: foreign } }], docs);
    }
    const locals = docs.map((doc) => valuesAt(doc, localField.split('.')));
    const wanted = new Set<unknown>();
    for (const values of locals) {
      if (values.length === 0) wanted.add(null);
      for (const v of values) wanted.add(v === undefined ? null : v);
    }
    const foreign =
      wanted.size === 0 ? [] : await this.readForeign(from, { [foreignField]: { $in: [...wanted] } });
    // Each record joins the foreign records holding one of its values.
    const byValue = new Map<string, Set<Doc>>();
    for (const doc of foreign) {
      const values = valuesAt(doc, foreignField.split('.'));
      for (const v of values.length === 0 ? [null] : values) {
        const key = JSON.stringify(v ?? null);
        const set = byValue.get(key) ?? new Set<Doc>();
        set.add(doc);
        byValue.set(key, set);
      }
    }
    const joinedOf = (i: number): Set<Doc> => {
      const joined = new Set<Doc>();
      for (const v of locals[i]!.length === 0 ? [null] : locals[i]!)
        for (const f of byValue.get(JSON.stringify(v ?? null)) ?? []) joined.add(f);
      return joined;
    };
    checkJoin(docs.reduce((n, _doc, i) => n + joinedOf(i).size, 0));
    if (spec.pipeline === undefined) return this.runStages([{ $lookup: { ...spec, from: foreign } }], docs);
    // The concise form (both a join on fields and a pipeline): the pipeline sees only the foreign
    // records that join this record, so each record is joined on its own.
    const { localField: _l, foreignField: _f, ...rest } = spec;
    const results = await this.processes.run(
      docs.map((doc, i) => ({ stages: [{ $lookup: { ...rest, from: [...joinedOf(i)] } }], docs: [doc] })),
    );
    return results.flat();
  }

  /** Records of a schema collection; any other name (accounts, runtime state) reads as an empty collection. */
  private async readForeign(collection: string, filter: Filter, whole = false): Promise<Doc[]> {
    if (!isCollectionName(collection)) return [];
    const found = await this.reader.find(
      [collection],
      filter,
      whole ? { limit: LOOKUP_COLLECTION_LIMIT + 1 } : {},
    );
    if (found.length > LOOKUP_COLLECTION_LIMIT) {
      throw new Unprocessable(
        `$lookup from ${collection} without localField and foreignField would join more than ` +
          `${LOOKUP_COLLECTION_LIMIT} records; join on fields (localField and foreignField) instead`,
      );
    }
    return found.map(asPipelineDocument(collection));
  }
}
