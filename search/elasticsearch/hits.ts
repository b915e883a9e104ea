/**
 * Reading hits from the Elasticsearch search index: the ids a candidate query matches (one request
 * for most queries), and every hit of a query page by page in a point in time.
 */
import type { Client } from '@elastic/elasticsearch';
import type { Candidates } from '../port.ts';

/** Hits per search request (Elasticsearch's `index.max_result_window`). */
const PAGE = 10_000;
const KEEP_ALIVE = '1m';

/**
 * One request answers most queries: up to `limit + 1` ids with the count up to `limit + 1`. Only
 * a set larger than one page but within the limit is paged, in a point in time.
 */
export async function searchIds(
  client: Client,
  index: string,
  query: unknown,
  limit: number,
): Promise<Candidates> {
  const res = await client.search({
    index,
    size: Math.min(limit + 1, PAGE),
    _source: false,
    query: query as never,
    sort: ['_doc'],
    track_total_hits: limit + 1,
  });
  if ((res._shards?.failed ?? 0) > 0) throw new Error('shard failures');
  const total = typeof res.hits.total === 'number' ? res.hits.total : (res.hits.total?.value ?? 0);
  if (total > limit) return { all: true };
  const ids = new Set(res.hits.hits.map((h) => h._id!));
  if (ids.size >= total) return { all: false, ids };
  ids.clear();
  for await (const hits of pages(client, index, query, {})) {
    for (const h of hits) ids.add(h._id);
    if (ids.size > limit) return { all: true };
  }
  return { all: false, ids };
}

/** Pages through every hit of a query in a point in time. */
export async function* pages(
  client: Client,
  index: string,
  query: unknown,
  extra: Record<string, unknown>,
): AsyncIterable<any[]> {
  const pit = await client.openPointInTime({ index, keep_alive: KEEP_ALIVE });
  try {
    let searchAfter: unknown[] | undefined;
    for (;;) {
      const res = await client.search({
        size: PAGE,
        _source: false,
        query: query as never,
        pit: { id: pit.id, keep_alive: KEEP_ALIVE },
        sort: [{ _shard_doc: 'asc' }] as never,
        track_total_hits: false,
        ...(searchAfter ? { search_after: searchAfter as never } : {}),
        ...extra,
      });
      if ((res._shards?.failed ?? 0) > 0) throw new Error('shard failures');
      const hits: any[] = res.hits.hits;
      if (hits.length === 0) return;
      yield hits;
      if (hits.length < PAGE) return;
      searchAfter = hits[hits.length - 1].sort;
    }
  } finally {
    await client.closePointInTime({ id: pit.id }).catch(() => undefined);
  }
}
