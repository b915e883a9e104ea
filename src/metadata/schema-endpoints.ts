/**
 * The `/nmdcschema/...` endpoints: JSON filters, projections and page tokens over any collection
 * of the schema's Database class.
 */
import { BadRequest, NotFound } from '../errors.ts';
import { parseFieldList } from '../query/compact.ts';
import { parseJsonFilter } from '../query/guard/index.ts';
import { COLLECTION_NAMES, collectionOfId, isCollectionName, isTypecode } from '../schema/nmdc.ts';
import type { Doc, StateStore } from '../store/port.ts';
import type { CollectionsReader, FoundRecord } from './collections-reader.ts';
import { tokenPage, type TokenPage } from './token-pages.ts';
import { largerPageInstead } from './paging-state.ts';
import { isStoreKey, shownRecord, shownStored } from '../store/record-keys.ts';
import type { RecordText } from '../json-text.ts';

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

/**
 * A record found by `id` as answers show it (shownRecord). Showing drops only a store key, which is
 * the record's id: a record whose id is shown is answered as found, its JSON text included.
 */
function shown(found: FoundRecord, id: string): FoundRecord {
  if ('doc' in found) return { collection: found.collection, doc: shownRecord(found.collection, found.doc) };
  if (!isStoreKey(found.collection, id)) return found;
  return { collection: found.collection, doc: shownRecord(found.collection, JSON.parse(found.text) as Doc) };
}

export class SchemaEndpoints {
  constructor(
    private readonly reader: CollectionsReader,
    private readonly state: StateStore,
  ) {}

  /** A page of the listing; records answered whole may be their stored texts (RecordText). */
  async list(collection: string, params: ListParams): Promise<TokenPage<Doc | RecordText>> {
    checkCollectionName(collection);
    const page = await tokenPage(
      this.state,
      collection,
      { ...params, filter: () => parseJsonFilter(params.filter) },
      (filter, page) => this.reader.findWhole([collection], filter, page),
      largerPageInstead(collection),
    );
    return { ...page, resources: page.resources.map((record) => shownStored(collection, record)) };
  }

  /** The record, whole (as JSON text when the store gives it) or with the fields asked for. */
  async getOne(collection: string, id: string, projectionText?: string): Promise<FoundRecord> {
    checkCollectionName(collection);
    const fields = parseFieldList(projectionText);
    const found = fields
      ? await this.reader.getById([collection], id, fields)
      : await this.reader.getRecordById([collection], id);
    if (!found) throw new NotFound();
    return shown(found, id);
  }

  /** The record with this id in whichever collection holds it: the typecode's collection first. */
  async locate(id: string): Promise<FoundRecord> {
    const likely = collectionOfId(id);
    const order = likely ? [likely, ...COLLECTION_NAMES.filter((c) => c !== likely)] : [...COLLECTION_NAMES];
    const found = await this.reader.getRecordById(order, id);
    if (!found) throw new NotFound();
    return shown(found, id);
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
