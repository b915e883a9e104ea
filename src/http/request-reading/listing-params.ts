/**
 * The listing parameters of the original's paged `GET` endpoints, read from the query string.
 */
import type { Filter } from '../../store/port.ts';
import type { TokenPageParams } from '../../metadata/token-pages.ts';
import { queryInteger, queryText } from './values.ts';

/**
 * The listing parameters of a request, as the original's list endpoints read them: `filter` (JSON,
 * parsed by `readFilter` for a first page only), `projection`, `max_page_size` (default 20) and
 * `page_token`.
 */
export function listingParams(
  query: Record<string, unknown>,
  readFilter: (text: string | undefined) => Filter,
): TokenPageParams {
  return {
    filter: () => readFilter(queryText(query.filter)),
    projection: queryText(query.projection),
    max_page_size: queryInteger(query.max_page_size, 20),
    page_token: queryText(query.page_token),
  };
}
