/**
 * The `/nmdcschema/...` endpoints: JSON filters, projections and page tokens over any collection
 * of the schema's Database class.
 */
import { BadRequest, NotFound } from '../errors.ts';
import { parseFieldList } from '../query/compact.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { COLLECTION_NAMES, collectionOfId, isCollectionName, isTypecode } from '../schema/nmdc.ts';
import type { Doc, StateStore } from '../store/port.ts';
import type { CollectionsReader } from './collections-reader.ts';
import { tokenPage, type TokenPage } from './token-pages.ts';
import { largerPageInstead } from './paging-state.ts';
import { shownRecord } from '../store/record-keys.ts';

export interface ListParams {
  filter?: string;
  projection?: string;
  max_page_size: number;
  page_token?: string;
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

  async list(collection: string, params: ListParams): Promise<TokenPage> {
    checkCollectionName(collection);
    const page = await tokenPage(
      this.state,
      collection,
      { ...params, filter: () => parseJsonFilter(params.filter) },
      (filter, page) => this.reader.find([collection], filter, page),
      largerPageInstead(collection),
    );
    return { ...page, resources: page.resources.map((doc) => shownRecord(collection, doc)) };
  }

  async getOne(collection: string, id: string, projectionText?: string): Promise<Doc> {
    checkCollectionName(collection);
    const found = await this.reader.getById([collection], id, parseFieldList(projectionText));
    if (!found) throw new NotFound();
    return shownRecord(collection, found.doc);
  }

  /** The record with this id in whichever collection holds it: the typecode's collection first. */
  async locate(id: string): Promise<{ collection: string; doc: Doc }> {
    const likely = collectionOfId(id);
    const order = likely ? [likely, ...COLLECTION_NAMES.filter((c) => c !== likely)] : [...COLLECTION_NAMES];
    const found = await this.reader.getById(order, id);
    if (!found) throw new NotFound();
    return { collection: found.collection, doc: shownRecord(found.collection, found.doc) };
  }

  /**
   * The collection holding the record with this id. When there is none, the 404 says why, as the
   * original does: an id without a typecode, a typecode of no schema class, or no such record.
   */
  async collectionNameOf(id: string): Promise<{ id: string; collection_name: string }> {
    try {
      const { collection } = await this.locate(id);
      return { id, collection_name: collection };
    } catch (err) {
      if (!(err instanceof NotFound)) throw err;
      const typecode = /^nmdc:(\w+)?-/.exec(id)?.[1];
      if (typecode === undefined)
        throw new NotFound('The typecode portion of the specified `id` is invalid.');
      if (!isTypecode(typecode))
        throw new NotFound('The specified `id` is not compatible with any schema classes.');
      throw new NotFound('The specified `id` does not belong to any documents.');
    }
  }
}
