/**
 * Bulk export: every record of a collection, or those matching a JSON filter, streamed in id order
 * as NDJSON, a JSON array, CSV or TSV. Records are read in batches and each batch is written before
 * the next is read, waiting while the client is slower than the store (backpressure), so memory
 * stays the same whatever the size of the answer.
 *
 * CSV and TSV have one column per dotted path of a value (`lat_lon.latitude`); a list of plain
 * values is one column with the values joined by `|`, a list of objects has a column per position
 * (`has_credit_associations.0.applies_to_person.name`). The columns are what the matching records
 * have, found by a first pass over them (the header comes first); `id` is always the first.
 */
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import type { Doc, DocumentStore, Filter } from '../store/port.ts';
import { shownStored } from '../store/record-keys.ts';
import { jsonTextOf, type RecordText } from '../json-text.ts';
import type { CollectionsReader } from './collections-reader.ts';
import { Turns } from '../turns.ts';

export const EXPORT_FORMATS = ['ndjson', 'json', 'csv', 'tsv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The media type each format is answered with, and the ones an `Accept` header may name it by. */
export const EXPORT_MEDIA_TYPES: Record<ExportFormat, { contentType: string; accepted: string[] }> = {
  ndjson: {
    contentType: 'application/x-ndjson; charset=utf-8',
    accepted: ['application/x-ndjson', 'application/ndjson', 'application/jsonl'],
  },
  json: { contentType: 'application/json; charset=utf-8', accepted: ['application/json'] },
  csv: { contentType: 'text/csv; charset=utf-8; header=present', accepted: ['text/csv'] },
  tsv: { contentType: 'text/tab-separated-values; charset=utf-8', accepted: ['text/tab-separated-values'] },
};

/** Records read and written at a time. */
export const EXPORT_BATCH = 1000;

/** Where exported text goes: resolves when the consumer can take more. */
export type ExportSink = (chunk: string) => Promise<void>;

export interface ExportRequest {
  collection: string;
  filter: Filter;
  projection?: string[];
  format: ExportFormat;
}

/** Flattened `[path, text]` pairs of a record, in the record's own order. */
export function flattenRecord(doc: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const visit = (value: unknown, path: string): void => {
    if (isLeaf(value)) {
      out.push([path, leafText(value)]);
      return;
    }
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    if (entries.length === 0) out.push([path, '']);
    for (const [key, v] of entries) visit(v, path ? `${path}.${key}` : key);
  };
  visit(doc, '');
  return out;
}

function scalarText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : String(value);
}

/** RFC 4180: a field holding a comma, quote or line break is quoted, quotes doubled. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** IANA text/tab-separated-values forbids tabs and line breaks in fields: they are escaped as \t, \n, \r (and \ as \\). */
export function tsvField(text: string): string {
  return /[\t\r\n\\]/.test(text)
    ? text.replace(/[\t\r\n\\]/g, (c) => ({ '\t': '\\t', '\r': '\\r', '\n': '\\n', '\\': '\\\\' })[c]!)
    : text;
}

export class Exporter {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly store: DocumentStore,
  ) {}

  /** Matching records in id order, a batch at a time, as answers show them. */
  async *records(request: Omit<ExportRequest, 'format'>): AsyncGenerator<Doc[]> {
    // Read parsed (`find`), so shown as parsed records.
    for await (const batch of this.batches(request, false)) yield batch as Doc[];
  }

  /** As `records`; `whole`: records without a projection may come as their stored texts (findWhole). */
  private async *batches(
    request: Omit<ExportRequest, 'format'>,
    whole: boolean,
  ): AsyncGenerator<Array<Doc | RecordText>> {
    const { collection, filter, projection } = request;
    // The store answers a batch synchronously: without a turn, batch after batch (and the caller's
    // work on each) ran on the event loop with nothing between them (at 10^5, 130-160 ms).
    const turns = new Turns();
    let afterId: string | undefined;
    for (;;) {
      if (turns.due()) await turns.give();
      const page = { projection, afterId, limit: EXPORT_BATCH };
      const batch = await (whole
        ? this.reader.findWhole([collection], filter, page)
        : this.reader.find([collection], filter, page));
      if (batch.length === 0) return;
      afterId = batch[batch.length - 1]!.id;
      yield batch.map((record) => shownStored(collection, record));
      if (batch.length < EXPORT_BATCH) return;
    }
  }

  /** Stored JSON texts, when they are exactly the answer: the whole collection, unprojected. */
  private texts(request: ExportRequest): AsyncIterable<string[]> | undefined {
    const whole = Object.keys(request.filter).length === 0 && !request.projection;
    if (!whole || UNIDENTIFIED_COLLECTIONS.has(request.collection) || !this.store.scanTexts) return undefined;
    return this.store.scanTexts(request.collection, EXPORT_BATCH);
  }

  /** JSON texts of the matching records, a batch at a time. */
  private async *jsonTexts(request: ExportRequest): AsyncGenerator<string[]> {
    const texts = this.texts(request);
    if (texts) {
      yield* texts;
      return;
    }
    for await (const records of this.batches(request, true))
      yield records.map((record) => jsonTextOf(record));
  }

  /** Writes the whole export to `sink`; returns the number of records written. */
  async write(request: ExportRequest, sink: ExportSink): Promise<number> {
    switch (request.format) {
      case 'ndjson':
      case 'json':
        return this.writeJson(request, sink);
      case 'csv':
      case 'tsv':
        return this.writeTable(request, sink);
    }
  }

  private async writeJson(request: ExportRequest, sink: ExportSink): Promise<number> {
    const array = request.format === 'json';
    let count = 0;
    if (array) await sink('[');
    for await (const texts of this.jsonTexts(request)) {
      if (texts.length === 0) continue;
      const body = array ? texts.join(',\n') : texts.join('\n');
      await sink(array ? `${count === 0 ? '\n' : ',\n'}${body}` : `${body}\n`);
      count += texts.length;
    }
    if (array) await sink(count === 0 ? ']\n' : '\n]\n');
    return count;
  }

  /** The columns of a table export: every flattened path of the matching records, `id` first. */
  async columns(request: Omit<ExportRequest, 'format'>): Promise<string[]> {
    return (await this.columnTree(request)).columns;
  }

  private async columnTree(request: Omit<ExportRequest, 'format'>): Promise<ColumnTree> {
    const tree = new ColumnTree();
    for await (const docs of this.records(request)) for (const doc of docs) tree.add(doc);
    return tree;
  }

  private async writeTable(request: ExportRequest, sink: ExportSink): Promise<number> {
    const csv = request.format === 'csv';
    const field = csv ? csvField : tsvField;
    const separator = csv ? ',' : '\t';
    const end = csv ? '\r\n' : '\n';
    const tree = await this.columnTree(request);
    await sink(tree.columns.map(field).join(separator) + end);
    let count = 0;
    for await (const docs of this.records(request)) {
      let text = '';
      for (const doc of docs) text += tree.row(doc, field).join(separator) + end;
      await sink(text);
      count += docs.length;
    }
    return count;
  }
}

interface ColumnNode {
  /** The column of a value at this path, once one was seen. */
  column?: number;
  children?: Map<string, ColumnNode>;
}

/**
 * The columns of a table export as a tree of path segments, so a record is placed in its row by
 * walking the tree alongside it (no path text built per value). Paths as `flattenRecord` gives them.
 */
export class ColumnTree {
  readonly columns: string[] = ['id'];
  private readonly root: ColumnNode = { children: new Map([['id', { column: 0 }]]) };

  /** Adds the paths of a record's values that have no column yet. */
  add(doc: Record<string, unknown>): void {
    const visit = (value: unknown, node: ColumnNode, path: string): void => {
      if (isLeaf(value)) {
        node.column ??= this.columns.push(path) - 1;
        return;
      }
      node.children ??= new Map();
      const entries = Array.isArray(value)
        ? value.map((v, i) => [String(i), v] as const)
        : Object.entries(value);
      if (entries.length === 0) node.column ??= this.columns.push(path) - 1;
      for (const [key, v] of entries) {
        let child = node.children.get(key);
        if (!child) node.children.set(key, (child = {}));
        visit(v, child, path ? `${path}.${key}` : key);
      }
    };
    visit(doc, this.root, '');
  }

  /** The record's row: each value (written by `field`) in its column; values without a column are left out. */
  row(doc: Record<string, unknown>, field: (text: string) => string): string[] {
    const row = new Array<string>(this.columns.length).fill('');
    const visit = (value: unknown, node: ColumnNode | undefined): void => {
      if (!node) return;
      if (isLeaf(value)) {
        if (node.column !== undefined) row[node.column] = field(leafText(value));
        return;
      }
      if (Array.isArray(value)) value.forEach((v, i) => visit(v, node.children?.get(String(i))));
      else for (const key in value) visit((value as Record<string, unknown>)[key], node.children?.get(key));
    };
    visit(doc, this.root);
    return row;
  }
}

/** A value that is one cell: a scalar, null, or a list of scalars. */
function isLeaf(value: unknown): value is null | undefined | string | number | boolean | unknown[] {
  if (value === null || typeof value !== 'object') return true;
  return Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object');
}

function leafText(value: unknown): string {
  return Array.isArray(value)
    ? value.map((v) => scalarText(v).replace(/[\\|]/g, '\\$&')).join('|')
    : scalarText(value);
}
