/**
 * Listings paged with tokens (`max_page_size`, `page_token`, `next_page_token`), as the
 * `/nmdcschema/{collection_name}` endpoint and `GET /sites` answer them: records in id order,
 * a token only while more remain, and the filter and projection kept with the token, so a
 * continuation reads exactly what the first page asked for.
 */
import { BadRequest } from '../errors.ts';
import { parseFieldList } from '../query/compact.ts';
import type { Doc, Filter, StateStore } from '../store/port.ts';
import {
  MAX_PAGE_SIZE,
  checkMaxPageSize,
  loadContinuation,
  saveContinuationOnce,
  tooManyForOnePage,
} from './paging-state.ts';

export interface TokenPageParams {
  /** Parsed only for a first page; a continuation reads the filter it was given. */
  filter: () => Filter;
  projection?: string;
  max_page_size: number;
  page_token?: string;
}

/**
 * Reads records matching `filter` in id order, after `afterId`, at most `limit`: parsed, or (a
 * page answered whole) as RecordText.
 */
export type IdOrderedSource<R extends { id: string } = Doc> = (
  filter: Filter,
  page: { projection?: string[]; afterId?: string; limit?: number },
) => Promise<R[]>;

export interface TokenPage<R extends { id: string } = Doc> {
  resources: R[];
  next_page_token?: string;
}

interface PageTokenState {
  /** What the token lists (a collection, or a caller's sites): a token is only good for that. */
  scope: string;
  filter: Filter;
  projection: string | null;
  lastId: string;
}

/**
 * One page of a listing. `instead` is what a refusal of a too large page suggests (paging with
 * `next_page_token` when not given).
 */
export async function tokenPage<R extends { id: string } = Doc>(
  state: StateStore,
  scope: string,
  params: TokenPageParams,
  read: IdOrderedSource<R>,
  instead?: string,
): Promise<TokenPage<R>> {
  checkMaxPageSize(params.max_page_size, instead);
  let filter: Filter;
  let projectionText: string | undefined;
  let afterId: string | undefined;
  if (params.page_token !== undefined) {
    const saved = await loadContinuation<PageTokenState>(state, 'page-token', params.page_token);
    if (!saved || saved.scope !== scope) throw new BadRequest('`page_token` not found');
    ({ filter, lastId: afterId } = saved);
    projectionText = saved.projection ?? undefined;
  } else {
    filter = params.filter();
    projectionText = params.projection;
  }
  const projection = parseFieldList(projectionText);
  if (params.max_page_size < 1) {
    // Every matching record, as the original answers, while one page can hold them.
    const resources = await read(filter, { projection, afterId, limit: MAX_PAGE_SIZE + 1 });
    if (resources.length > MAX_PAGE_SIZE) throw tooManyForOnePage(instead);
    return { resources };
  }

  const batch = await read(filter, { projection, afterId, limit: params.max_page_size + 1 });
  const resources = batch.slice(0, params.max_page_size);
  if (batch.length <= params.max_page_size) return { resources };
  const next_page_token = await saveContinuationOnce<PageTokenState>(state, 'page-token', {
    scope,
    filter,
    projection: projectionText ?? null,
    lastId: resources[resources.length - 1]!.id,
  });
  return { resources, next_page_token };
}
