/**
 * The `/nmdcschema/...` endpoints: JSON filters, projections and page tokens over any collection
 * of the schema's Database class.
 */
import { BadRequest, NotFound } from '../http/errors.ts';
import { parseFieldList } from '../query/compact.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { COLLECTION_NAMES, collectionOfId, isCollectionName } from '../schema/nmdc.ts';
import type { Doc, Filter, StateStore } from '../store/port.ts';
import type { CollectionsReader } from './collections-reader.ts';
import { loadContinuation, saveContinuation } from './paging-state.ts';

export interface ListParams {
  filter?: string;
  projection?: string;
  max_page_size: number;
  page_token?: string;
}

interface PageTokenState {
  collection: string;
  filter: Filter;
  projection: string | null;
  lastId: string;
}

export function checkCollectionName(name: string): void {
  if (!isCollectionName(name)) {
    throw new BadRequest(
      `Unknown collection "${name}". Valid collection names: ${COLLECTION_NAMES.join(', ')}`,
    );
  }
}

export class SchemaEndpoints {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly state: StateStore,
  ) {}

  async list(
    collection: string,
    params: ListParams,
  ): Promise<{ resources: Doc[]; next_page_token?: string }> {
    checkCollectionName(collection);
    let filter: Filter;
    let projectionText: string | undefined;
    let afterId: string | undefined;
    if (params.page_token !== undefined) {
      const saved = await loadContinuation<PageTokenState>(this.state, 'page-token', params.page_token);
      if (!saved || saved.collection !== collection) throw new BadRequest('`page_token` not found');
      ({ filter } = saved);
      projectionText = saved.projection ?? undefined;
      afterId = saved.lastId;
    } else {
      filter = parseJsonFilter(params.filter);
      projectionText = params.projection;
    }
    const projection = parseFieldList(projectionText);
    if (params.max_page_size < 1) {
      return { resources: await this.reader.find([collection], filter, { projection, afterId }) };
    }
    const batch = await this.reader.find([collection], filter, {
      projection,
      afterId,
      limit: params.max_page_size + 1,
    });
    const resources = batch.slice(0, params.max_page_size);
    if (batch.length <= params.max_page_size) return { resources };
    const next_page_token = await saveContinuation<PageTokenState>(this.state, 'page-token', {
      collection,
      filter,
      projection: projectionText ?? null,
      lastId: resources[resources.length - 1]!.id,
    });
    return { resources, next_page_token };
  }

  async getOne(collection: string, id: string, projectionText?: string): Promise<Doc> {
    checkCollectionName(collection);
    const found = await this.reader.getById([collection], id, parseFieldList(projectionText));
    if (!found) throw new NotFound();
    return found.doc;
  }

  /** The record with this id in whichever collection holds it: the typecode's collection first. */
  async locate(id: string): Promise<{ collection: string; doc: Doc }> {
    const likely = collectionOfId(id);
    const order = likely ? [likely, ...COLLECTION_NAMES.filter((c) => c !== likely)] : [...COLLECTION_NAMES];
    const found = await this.reader.getById(order, id);
    if (!found) throw new NotFound();
    return found;
  }
}
