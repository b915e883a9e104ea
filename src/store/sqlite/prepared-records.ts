/**
 * What the writing thread needs of a staged batch's records, prepared where the batch is parsed
 * anyway (the preparing workers, `search/sqlite/prepare-worker.ts`), so that the thread itself
 * parses none of them: their ids, their attribute index entries, and what the write hooks ask
 * for (the provenance edges). It is the thread's work that sets a large submission's time: for
 * 10^5 biosamples it took 8.0-8.5 CPU s with the records prepared against 10.1-11.0 s parsing them
 * (their garbage included). The form is compact, flat lists rather than an object per record or
 * entry: a structured clone of the entries as `RecordIndex` objects took 0.7 s to read back, this
 * one 0.13-0.15 s.
 */
import type { Doc } from '../port.ts';
import { indexRecord, type IndexValue, type RecordIndex } from './attribute-index.ts';

/** A record's type and the references it holds, as the provenance edges keep them. */
export interface RecordGraph {
  type: string;
  edges: Array<{ up: string; down: string; slot: string; holder: 'up' | 'down' }>;
}

export interface PreparedRecords {
  /** Each record's id, text by text. */
  ids: string[];
  /** The attribute index entries of every record, one after the other (`indexRecord`'s order). */
  entries: {
    /** The paths, each once; an entry names its path by number. */
    paths: string[];
    path: Int32Array;
    value: IndexValue[];
    /** Where each record's entries end. */
    end: Int32Array;
    /** The irregular paths (by number) of the records that have any, by position. */
    irregular: Record<number, number[]>;
  };
  /** The records' types and edges, when asked for (see `RecordGraph`). */
  graph?: {
    types: string[];
    /** Where each record's edges end. */
    end: Int32Array;
    /** The up, down and slot of each edge, one after the other. */
    ends: string[];
    /** 1 where the downstream record holds the edge's reference. */
    downHolds: Uint8Array;
  };
}

/**
 * The prepared form of `docs` (parsed from a batch's texts, which are their `JSON.stringify`);
 * `graphOf` gives each one's type and edges when the write hooks keep a graph of them.
 * Undefined when a text is not such a record (not an object, no string id, a MongoDB `_id`): the
 * writing thread then parses the texts itself, and refuses them as the store does.
 */
export function prepareRecords(
  docs: unknown[],
  graphOf?: (doc: Doc) => RecordGraph,
): PreparedRecords | undefined {
  const ids: string[] = [];
  const paths: string[] = [];
  const pathNumber = new Map<string, number>();
  const numberOf = (path: string) => {
    let n = pathNumber.get(path);
    if (n === undefined) {
      n = paths.length;
      paths.push(path);
      pathNumber.set(path, n);
    }
    return n;
  };
  const entryPath: number[] = [];
  const value: IndexValue[] = [];
  const end = new Int32Array(docs.length);
  const irregular: Record<number, number[]> = {};
  const types: string[] = [];
  const edgeEnd = new Int32Array(graphOf ? docs.length : 0);
  const ends: string[] = [];
  const downHolds: number[] = [];
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i] as Doc;
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return undefined;
    if (typeof doc.id !== 'string' || doc.id === '' || '_id' in doc) return undefined;
    ids.push(doc.id);
    const index = indexRecord(doc);
    for (const [path, v] of index.entries) {
      entryPath.push(numberOf(path));
      value.push(v);
    }
    end[i] = value.length;
    if (index.irregular.length > 0) irregular[i] = index.irregular.map(numberOf);
    if (graphOf) {
      const { type, edges } = graphOf(doc);
      types.push(type);
      for (const edge of edges) {
        ends.push(edge.up, edge.down, edge.slot);
        downHolds.push(edge.holder === 'down' ? 1 : 0);
      }
      edgeEnd[i] = downHolds.length;
    }
  }
  return {
    ids,
    entries: { paths, path: Int32Array.from(entryPath), value, end, irregular },
    ...(graphOf ? { graph: { types, end: edgeEnd, ends, downHolds: Uint8Array.from(downHolds) } } : {}),
  };
}

/** Where record `i`'s entries start and end in `prepared.entries`. */
export function entriesOf(prepared: PreparedRecords, i: number): { from: number; to: number } {
  return { from: i === 0 ? 0 : prepared.entries.end[i - 1]!, to: prepared.entries.end[i]! };
}

/** Record `i`'s index as `indexRecord` gives it. */
export function recordIndexAt(prepared: PreparedRecords, i: number): RecordIndex {
  const { paths, path, value, irregular } = prepared.entries;
  const { from, to } = entriesOf(prepared, i);
  const entries: Array<[string, IndexValue]> = [];
  for (let k = from; k < to; k++) entries.push([paths[path[k]!]!, value[k]!]);
  return { entries, irregular: (irregular[i] ?? []).map((n) => paths[n]!) };
}

/** Record `i`'s type and edges (the collection's records were prepared with their graph). */
export function recordGraphAt(prepared: PreparedRecords, i: number): RecordGraph {
  const graph = prepared.graph!;
  const from = i === 0 ? 0 : graph.end[i - 1]!;
  const edges: RecordGraph['edges'] = [];
  for (let k = from; k < graph.end[i]!; k++)
    edges.push({
      up: graph.ends[3 * k]!,
      down: graph.ends[3 * k + 1]!,
      slot: graph.ends[3 * k + 2]!,
      holder: graph.downHolds[k] === 1 ? 'down' : 'up',
    });
  return { type: graph.types[i]!, edges };
}
