/**
 * The Elasticsearch search index: one index per collection (`${prefix}-${collection}`), explicit
 * mappings, bulk writes, ids-only candidate queries paged with point-in-time + search_after.
 *
 * Mapping design (no nested documents, no dynamic fields):
 * - `values` (wildcard): one entry per indexed string, `path + US + value` (US = U+001F). A
 *   regexp query `PATH(\..*)?US(REGEXP)` binds the value to its path inside a single entry,
 *   which an array of plain objects could not do (their fields flatten independently), and the
 *   wildcard type verifies regexps over whole values of any length (no ignore_above).
 * - `text` (text, `nmdc_words` analyzer: the word rule of search/words.ts) and `paths`
 *   (keyword): word predicates. Words are not bound to their path (a superset; the source of
 *   truth decides).
 * - `fingerprint` (keyword): content hash for check-index.
 */
import { Client } from '@elastic/elasticsearch';
import type { Doc } from '../../src/store/port.ts';
import type { Candidates, IndexablePredicate, SearchIndex } from '../port.ts';
import { fingerprintOf, indexedPathScope, indexedValuesOf } from '../indexed-values.ts';
import { luceneRegexpOfPredicate } from '../predicates.ts';
import { constrainsOnlyLength } from '../regex/lucene-regexp.ts';
import { wordsOf } from '../words.ts';
import { isCollectionName } from '../../src/schema/nmdc.ts';

/** Separates path and value inside a `values` entry. */
export const PATH_SEPARATOR = '\u001f';
const PAGE = 10_000;
const KEEP_ALIVE = '1m';
const META_ID = 'watermark';

/** The part of the official client this adapter uses (tests pass a recording fake). */
export interface EsClient {
  indices: {
    exists(req: { index: string }): Promise<boolean>;
    create(req: { index: string; settings: unknown; mappings: unknown }): Promise<unknown>;
    delete(req: { index: string; ignore_unavailable?: boolean }): Promise<unknown>;
    refresh(req: { index: string; ignore_unavailable?: boolean }): Promise<unknown>;
  };
  bulk(req: {
    operations: unknown[];
    refresh?: boolean | 'wait_for';
  }): Promise<{ errors: boolean; items: any[] }>;
  search(req: Record<string, unknown>): Promise<any>;
  openPointInTime(req: {
    index: string;
    keep_alive: string;
    ignore_unavailable?: boolean;
  }): Promise<{ id: string }>;
  closePointInTime(req: { id: string }): Promise<unknown>;
  get(req: { index: string; id: string }): Promise<{ _source?: unknown }>;
  index(req: {
    index: string;
    id: string;
    document: unknown;
    refresh?: boolean | 'wait_for';
  }): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Longest regexp Elasticsearch accepts (its `index.max_regex_length`, set explicitly on our
 * indexes); a longer translation is not sent and the index declines to narrow.
 */
export const MAX_REGEX_LENGTH = 1000;

export const INDEX_SETTINGS = {
  number_of_shards: 1,
  max_regex_length: MAX_REGEX_LENGTH,
  analysis: {
    tokenizer: { nmdc_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}]+' } },
    analyzer: { nmdc_words: { type: 'custom', tokenizer: 'nmdc_words', filter: ['lowercase'] } },
  },
};

export const INDEX_MAPPINGS = {
  dynamic: false,
  properties: {
    fingerprint: { type: 'keyword' },
    paths: { type: 'keyword' },
    values: { type: 'wildcard' },
    text: { type: 'text', analyzer: 'nmdc_words' },
  },
};

/** The stored form of a record. */
export function documentOf(doc: Doc): {
  fingerprint: string;
  paths: string[];
  values: string[];
  text: string[];
} {
  const values = indexedValuesOf(doc);
  return {
    fingerprint: fingerprintOf(doc),
    paths: [...new Set(values.map((v) => v.path))],
    values: values.map((v) => `${v.path}${PATH_SEPARATOR}${v.value}`),
    text: [...new Set(values.map((v) => v.value))],
  };
}

const escapeLucene = (s: string) => s.replace(/[^A-Za-z0-9_]/g, (c) => `\\${c}`);

/** The query that narrows one predicate, or null when it cannot narrow. */
export function queryOf(predicate: IndexablePredicate): Record<string, unknown> | null {
  const scope = indexedPathScope(predicate.path);
  if (predicate.kind === 'words') {
    const words = wordsOf(predicate.text);
    if (words.length === 0) return null;
    return {
      bool: {
        filter: [
          { match: { text: { query: words.join(' '), operator: 'and' } } },
          ...(scope === '' ? [] : [{ prefix: { paths: { value: scope } } }]),
        ],
      },
    };
  }
  const lucene = luceneRegexpOfPredicate(predicate);
  if (constrainsOnlyLength(lucene.regexp)) return null;
  const pathPart = scope === '' ? '.*' : `${escapeLucene(scope)}(\\..*)?`;
  const value = `${pathPart}${PATH_SEPARATOR}(${lucene.regexp})`;
  if (value.length > MAX_REGEX_LENGTH) return null;
  return {
    regexp: {
      values: {
        value,
        flags: 'NONE',
        case_insensitive: lucene.caseInsensitive,
        max_determinized_states: 10_000,
      },
    },
  };
}

export class ElasticsearchIndex implements SearchIndex {
  readonly engine = 'elasticsearch' as const;
  readonly synchronous = false;
  private readonly ready = new Set<string>();

  constructor(
    private readonly client: EsClient,
    readonly prefix: string,
  ) {}

  static async connect(url: string, prefix: string): Promise<ElasticsearchIndex> {
    const client = new Client({ node: url, requestTimeout: 30_000 });
    // Fail at start-up, naming the setting, rather than on the first search.
    try {
      await client.ping({}, { requestTimeout: 5000, maxRetries: 0 });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new Error(
        `cannot reach Elasticsearch at ELASTICSEARCH_URL (${new URL(url).origin}): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    return new ElasticsearchIndex(client as unknown as EsClient, prefix);
  }

  /** The schema's metadata collections; the service's own records are decided by the store alone. */
  covers(collection: string): boolean {
    return isCollectionName(collection);
  }

  indexName(collection: string): string {
    return `${this.prefix}-${collection}`;
  }

  private get metaIndex(): string {
    return `${this.prefix}--meta`;
  }

  private async ensureIndex(index: string, mappings: unknown = INDEX_MAPPINGS): Promise<void> {
    if (this.ready.has(index)) return;
    if (!(await this.client.indices.exists({ index }))) {
      await this.client.indices.create({ index, settings: INDEX_SETTINGS, mappings });
    }
    this.ready.add(index);
  }

  private async bulk(operations: unknown[]): Promise<void> {
    if (operations.length === 0) return;
    const res = await this.client.bulk({ operations });
    if (res.errors) {
      const failed = res.items.find((i) => Object.values(i).some((r: any) => r.error && r.status !== 404));
      if (failed) throw new Error(`Elasticsearch bulk write failed: ${JSON.stringify(failed).slice(0, 500)}`);
    }
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    const index = this.indexName(collection);
    await this.ensureIndex(index);
    const operations: unknown[] = [];
    for (const doc of docs) operations.push({ index: { _index: index, _id: doc.id } }, documentOf(doc));
    await this.bulk(operations);
  }

  async remove(collection: string, ids: string[]): Promise<void> {
    const index = this.indexName(collection);
    await this.bulk(ids.map((id) => ({ delete: { _index: index, _id: id } })));
  }

  /** Pages through every hit of a query in a point-in-time; stops (returning false) when `onPage` says so. */
  private async *pages(index: string, query: unknown, extra: Record<string, unknown>): AsyncIterable<any[]> {
    const pit = await this.client.openPointInTime({
      index,
      keep_alive: KEEP_ALIVE,
      ignore_unavailable: true,
    });
    try {
      let searchAfter: unknown[] | undefined;
      for (;;) {
        const res = await this.client.search({
          size: PAGE,
          _source: false,
          query,
          pit: { id: pit.id, keep_alive: KEEP_ALIVE },
          sort: [{ _shard_doc: 'asc' }],
          track_total_hits: false,
          ...(searchAfter ? { search_after: searchAfter } : {}),
          ...extra,
        });
        const hits: any[] = res.hits.hits;
        if (hits.length === 0) return;
        yield hits;
        if (hits.length < PAGE) return;
        searchAfter = hits[hits.length - 1].sort;
      }
    } finally {
      await this.client.closePointInTime({ id: pit.id });
    }
  }

  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    const query = queryOf(predicate);
    if (query === null) return { all: true };
    const index = this.indexName(collection);
    // Count up to the limit first: a set too large to help costs one request, not a full page-through.
    let counted: any;
    try {
      counted = await this.client.search({
        index,
        size: 0,
        query,
        track_total_hits: limit + 1,
        ignore_unavailable: true,
      });
    } catch (err) {
      // A regexp Lucene refuses (too complex) cannot narrow; the source of truth scans.
      if (String((err as Error).message).includes('too_complex')) return { all: true };
      throw err;
    }
    if ((counted.hits?.total?.value ?? 0) > limit) return { all: true };
    const ids = new Set<string>();
    for await (const hits of this.pages(index, query, {})) {
      for (const h of hits) ids.add(h._id);
      if (ids.size > limit) return { all: true };
    }
    return { all: false, ids };
  }

  async clear(collection: string): Promise<void> {
    const index = this.indexName(collection);
    await this.client.indices.delete({ index, ignore_unavailable: true });
    this.ready.delete(index);
    await this.ensureIndex(index);
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    const index = this.indexName(collection);
    if (!(await this.client.indices.exists({ index }))) return;
    await this.client.indices.refresh({ index });
    for await (const hits of this.pages(index, { match_all: {} }, { docvalue_fields: ['fingerprint'] })) {
      yield hits.map((h) => ({ id: h._id as string, fingerprint: String(h.fields?.fingerprint?.[0] ?? '') }));
    }
  }

  async watermark(): Promise<number> {
    try {
      const res = await this.client.get({ index: this.metaIndex, id: META_ID });
      return Number((res._source as { seq?: number } | undefined)?.seq ?? 0);
    } catch (err) {
      if ((err as { meta?: { statusCode?: number } }).meta?.statusCode === 404) return 0;
      throw err;
    }
  }

  async setWatermark(seq: number): Promise<void> {
    // Writes before `seq` become searchable only after a refresh; advance the mark after it.
    await this.client.indices.refresh({ index: `${this.prefix}-*`, ignore_unavailable: true });
    await this.ensureIndex(this.metaIndex, { dynamic: false, properties: { seq: { type: 'long' } } });
    await this.client.index({ index: this.metaIndex, id: META_ID, document: { seq }, refresh: 'wait_for' });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
