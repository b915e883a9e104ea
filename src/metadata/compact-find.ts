/**
 * The compact-syntax find endpoints (`/studies`, `/biosamples`, `/data_objects`,
 * `/planned_processes`): filter, sort, fields, page or cursor paging, exact counts.
 */
import { BadRequest, Unprocessable } from '../errors.ts';
import { parseCompactFilter, parseCompactSort, parseFieldList } from '../query/compact.ts';
import { closestNames, unknownFieldPath } from '../schema/field-paths.ts';
import { guardFilter } from '../query/guard/index.ts';
import type { Doc, Filter, Sort, StateStore } from '../store/port.ts';
import type { CollectionsReader } from './collections-reader.ts';
import type { RecordText } from '../json-text.ts';
import { CONTINUATION_TTL_SECONDS, loadContinuation, saveContinuation } from './paging-state.ts';

/** Page-based access may skip at most this many records; beyond it callers use cursors. */
export const MAX_PAGE_SKIP = 10_000;

export interface CompactFindParams {
  filter?: string;
  sort?: string;
  fields?: string;
  page?: number;
  per_page: number;
  cursor?: string;
  /** Declared by the original and never supported there either: refused with a pointer to `filter`. */
  search?: string;
  group_by?: string;
}

export interface FindResponse {
  meta: {
    mongo_filter_dict: Filter;
    mongo_sort_list: Array<[string, number]> | null;
    count: number;
    db_response_time_ms: number;
    page: number | null;
    per_page: number;
    next_cursor?: string | null;
    fields?: string;
  };
  /** Records, whole ones possibly as their stored texts (CollectionsReader.findWhole). */
  results: Array<Doc | RecordText>;
  group_by: unknown[];
}

interface CursorState {
  collections: string[];
  filter: Filter;
  sort: Sort | null;
  fields: string | null;
  perPage: number;
  /** Records already returned (used when sorted). */
  offset: number;
  /** Last id returned (keyset paging in id order when unsorted). */
  lastId: string | null;
  /** Sort keys of the last record returned (keyset paging in sort order, one collection). */
  lastKeys?: unknown[] | null;
  count: number;
}

/** Where a JSON filter for these collections goes: the collection endpoint of one, or the template. */
function jsonFilterEndpoint(collections: string[]): string {
  return collections.length === 1 ? `/nmdcschema/${collections[0]}` : '/nmdcschema/{collection_name}';
}

/**
 * The compact filter of a request. A JSON text is refused with the way to send it: read as the
 * compact syntax it would be a filter on an attribute named `{"...` that matches nothing.
 */
export function readCompactFilter(collections: string[], text: string | undefined): Filter {
  const start = text?.trimStart()[0];
  if (start === '{' || start === '[') {
    throw new BadRequest(
      'filter here is the compact syntax attribute:value[,attribute:value]* (e.g. ecosystem_category:Plants), ' +
        `not JSON. For a JSON (MongoDB) filter use GET ${jsonFilterEndpoint(collections)}?filter=<JSON>, ` +
        'or POST /queries:run with a find command.',
    );
  }
  return guardFilter(parseCompactFilter(text));
}

/**
 * The compact sort of a request, each key a field the collections' records can have by the schema
 * (MongoDB would accept any name and leave the order as it is).
 */
export function readCompactSort(collections: string[], text: string | undefined): Sort | undefined {
  const sort = parseCompactSort(text);
  for (const [field] of sort ?? []) {
    const unknown = unknownFieldPath(collections, field);
    if (!unknown) continue;
    let hint = '';
    if (field.startsWith('-') && !unknownFieldPath(collections, field.slice(1)))
      hint = ` For descending order write ${field.slice(1)}:desc.`;
    else {
      const close = closestNames(unknown.segment, unknown.valid);
      if (close.length) hint = ` Did you mean ${close.map((c) => `"${c}"`).join(' or ')}?`;
    }
    const why =
      unknown.parent === ''
        ? `records of ${collections.join(', ')} have no field "${unknown.segment}"`
        : unknown.valid.length === 0
          ? `"${unknown.parent}" holds plain values or ids of other records, not objects with a field "${unknown.segment}"`
          : `"${unknown.parent}" has no field "${unknown.segment}"`;
    throw new Unprocessable(
      `Unknown sort field "${field}": ${why}.${hint} ` +
        'Sort must be of form: attribute[:asc|:desc][,attribute[:asc|:desc]]*',
    );
  }
  return sort;
}

export class CompactFind {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly state: StateStore,
  ) {}

  async find(collections: string[], params: CompactFindParams): Promise<FindResponse> {
    const started = performance.now();
    if (params.search !== undefined) {
      throw new Unprocessable('search= is not supported; use filter=<attribute>.search:<text> instead');
    }
    if (params.group_by !== undefined) throw new Unprocessable('group_by= is not supported');
    if (params.cursor !== undefined && params.page !== undefined) {
      throw new Unprocessable('Use either page or cursor, not both');
    }
    if (params.cursor !== undefined) return this.cursorPage(collections, params, started);

    const filter = readCompactFilter(collections, params.filter);
    const sort = readCompactSort(collections, params.sort);
    const projection = parseFieldList(params.fields);
    const page = params.page ?? 1;
    const skip = (page - 1) * params.per_page;
    if (skip > MAX_PAGE_SKIP) {
      throw new BadRequest(
        `Page-based access is limited to the first ${MAX_PAGE_SKIP} records; use cursor paging (cursor=*) to go further`,
      );
    }
    const [results, count] = await Promise.all([
      this.reader.findWhole(collections, filter, { sort, projection, skip, limit: params.per_page }),
      this.reader.count(collections, filter),
    ]);
    return this.response(filter, sort, params.fields, count, started, results, {
      page,
      per_page: params.per_page,
    });
  }

  private async cursorPage(
    collections: string[],
    params: CompactFindParams,
    started: number,
  ): Promise<FindResponse> {
    let state: CursorState;
    if (params.cursor === '*') {
      const filter = readCompactFilter(collections, params.filter);
      state = {
        collections,
        filter,
        sort: readCompactSort(collections, params.sort) ?? null,
        fields: params.fields ?? null,
        perPage: params.per_page,
        offset: 0,
        lastId: null,
        count: await this.reader.count(collections, filter),
      };
    } else {
      const saved = await loadContinuation<CursorState>(this.state, 'find-cursor', params.cursor!);
      if (!saved || saved.collections.join() !== collections.join()) throw new BadRequest('Bad cursor value');
      state = { ...saved, perPage: params.per_page };
    }
    const projection = parseFieldList(state.fields ?? undefined);
    // One record beyond the page tells whether another page exists.
    const { docs: batch, keyAt } = await this.reader.findSorted(
      collections,
      state.filter,
      {
        sort: state.sort ?? undefined,
        projection,
        ...(state.sort
          ? { skip: state.offset, after: state.lastKeys ?? undefined }
          : { afterId: state.lastId ?? undefined }),
        limit: state.perPage + 1,
      },
      true,
    );
    const results = batch.slice(0, state.perPage);
    let nextCursor: string | null = null;
    if (batch.length > state.perPage) {
      nextCursor = await saveContinuation<CursorState>(this.state, 'find-cursor', {
        ...state,
        offset: state.offset + results.length,
        lastId: results[results.length - 1]!.id,
        lastKeys: keyAt?.(results.length - 1) ?? null,
      });
    }
    return this.response(
      state.filter,
      state.sort ?? undefined,
      state.fields ?? undefined,
      state.count,
      started,
      results,
      {
        page: null,
        per_page: state.perPage,
        next_cursor: nextCursor,
      },
    );
  }

  private response(
    filter: Filter,
    sort: Sort | undefined,
    fields: string | undefined,
    count: number,
    started: number,
    results: Array<Doc | RecordText>,
    paging: { page: number | null; per_page: number; next_cursor?: string | null },
  ): FindResponse {
    return {
      meta: {
        mongo_filter_dict: filter,
        mongo_sort_list: sort ? sort.map(([f, d]) => [f, d]) : null,
        count,
        db_response_time_ms: Math.round(performance.now() - started),
        ...paging,
        ...(fields !== undefined ? { fields } : {}),
      },
      results,
      group_by: [],
    };
  }
}

export { CONTINUATION_TTL_SECONDS };
