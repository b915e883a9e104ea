/**
 * The Elasticsearch search index: for each collection an alias (`${prefix}-${collection}`) in
 * front of one concrete index, explicit mappings, bulk writes split by bytes and answered per item,
 * versioned by the change sequence, and ids-only candidate queries.
 *
 * The settings, mappings, stored form and queries are in mapping.ts; paging through hits in
 * hits.ts; refused records on their way to the meta document in refusal-ledger.ts.
 *
 * Running beside a live service:
 * - Writes go through the alias and require it to be one (`require_alias`), and an index template
 *   gives any index named `${prefix}-*` our settings and mappings, so a write can never create an
 *   index with dynamic mappings (under which every regexp would match nothing).
 * - `reindex` fills a new concrete index behind a second alias (`…--next`) while catch-ups write
 *   every change to both, then moves the alias to it in one atomic step and drops the old one:
 *   searches read a complete index throughout.
 * - Every write carries the change sequence as an external version, so a slower process can
 *   never put an older state of a record back.
 * - A record Elasticsearch refuses for good is logged, kept in the meta document (check-index
 *   lists it) and stays a search candidate; the watermark moves on.
 * - A query Elasticsearch refuses (400) cannot narrow: the store scans; nothing of Elasticsearch's
 *   error reaches the user. Other failures are SearchIndexUnavailable (503).
 */
import type { Client } from '@elastic/elasticsearch';
import type { Logger } from 'pino';
import type { Doc } from '../../src/store/port.ts';
import type { Candidates, Freshness, IndexablePredicate, IndexWrite, SearchIndex } from '../port.ts';
import { isCollectionName } from '../../src/schema/nmdc.ts';
import { SearchIndexUnavailable } from '../errors.ts';
import { BulkWriter, MissingIndex, type BulkOp } from './bulk.ts';
import {
  connectClient,
  describeError,
  errorTypesOf,
  guarded,
  statusOf,
  type ElasticsearchConnection,
} from './client.ts';
import { pages, searchIds } from './hits.ts';
import { documentOf, INDEX_MAPPINGS, INDEX_SETTINGS, queryOf } from './mapping.ts';
import { IndexMeta, type Refusal } from './meta.ts';
import { RefusalLedger } from './refusal-ledger.ts';

export interface ElasticsearchIndexOptions {
  logger?: Logger;
  /** Largest `_bulk` request body, in bytes (default 8 MiB). */
  bulkBytes?: number;
  /** Transient-failure retries of bulk writes (tests shorten the backoff). */
  bulkAttempts?: number;
  bulkBackoffMs?: number;
}

export class ElasticsearchIndex implements SearchIndex {
  readonly engine = 'elasticsearch' as const;
  readonly synchronous = false;
  /** Collections whose alias is known to exist. */
  private readonly ready = new Set<string>();
  /** Rebuilds this process runs: collection -> the concrete index being filled. */
  private readonly rebuilding = new Map<string, string>();
  private readonly meta: IndexMeta;
  private readonly bulkWriter: BulkWriter;
  private readonly logger?: Logger;
  /** The records Elasticsearch refused, on their way to the meta document. */
  private readonly ledger: RefusalLedger;
  /** Queries Elasticsearch refused (400): each one could not narrow. */
  refusedQueries = 0;

  constructor(
    private readonly client: Client,
    readonly prefix: string,
    options: ElasticsearchIndexOptions = {},
  ) {
    this.logger = options.logger;
    this.meta = new IndexMeta(client, `${prefix}--meta`);
    this.ledger = new RefusalLedger(this.meta, this.logger);
    this.bulkWriter = new BulkWriter(client, {
      maxBytes: options.bulkBytes ?? 8 * 1024 * 1024,
      ...(options.bulkAttempts ? { attempts: options.bulkAttempts } : {}),
      ...(options.bulkBackoffMs !== undefined ? { backoffMs: options.bulkBackoffMs } : {}),
    });
  }

  /**
   * Connects (failing at start-up with a message that names the setting at fault) and installs
   * the index template.
   */
  static async connect(
    connection: ElasticsearchConnection & { prefix: string },
    options: ElasticsearchIndexOptions = {},
  ): Promise<ElasticsearchIndex> {
    const client = await connectClient(connection);
    const index = new ElasticsearchIndex(client, connection.prefix, options);
    await index.installTemplate();
    return index;
  }

  /** The schema's metadata collections; the service's own records are decided by the store alone. */
  covers(collection: string): boolean {
    return isCollectionName(collection);
  }

  /** The alias searches and writes use. */
  indexName(collection: string): string {
    return `${this.prefix}-${collection}`;
  }

  /** The alias of the index a rebuild fills. */
  private nextAlias(collection: string): string {
    return `${this.indexName(collection)}--next`;
  }

  private newConcreteName(collection: string): string {
    return `${this.indexName(collection)}--${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  }

  /**
   * An index template for `${prefix}-*`: an index created by anything else (an old process, a
   * stray write) still gets our settings and mappings. Its priority grows with the prefix, so
   * several deployments' prefixes (`nmdc`, `nmdc-test-…`) never tie.
   */
  async installTemplate(): Promise<void> {
    try {
      await this.client.indices.putIndexTemplate({
        name: `${this.prefix}-search-index`,
        index_patterns: [`${this.prefix}-*`],
        priority: 100 + this.prefix.length,
        template: { settings: INDEX_SETTINGS, mappings: INDEX_MAPPINGS } as never,
      });
    } catch (err) {
      // Writes still require our aliases; the template only guards against other writers.
      this.logger?.warn(
        { err: describeError(err) },
        'cannot install the Elasticsearch index template (needs the manage_index_templates privilege; see docs/SCALE-OUT.md)',
      );
    }
  }

  private async aliasExists(name: string): Promise<boolean> {
    return this.client.indices.existsAlias({ name });
  }

  /** The concrete indices behind an alias (none when it does not exist). */
  private async aliasTargets(name: string): Promise<string[]> {
    try {
      const res = await this.client.indices.getAlias({ name });
      return Object.keys(res);
    } catch (err) {
      if (statusOf(err) === 404) return [];
      throw err;
    }
  }

  private async createConcrete(
    name: string,
    aliases: Record<string, { is_write_index: boolean }>,
  ): Promise<void> {
    await this.client.indices.create({
      index: name,
      settings: INDEX_SETTINGS as never,
      mappings: INDEX_MAPPINGS as never,
      aliases,
    });
  }

  /**
   * Makes sure a collection's alias exists before a live write. The first write of a collection
   * creates its index; an index that existed and is gone is not made again empty (searches would
   * trust it): writes fail, searches scan, until `npm run reindex` rebuilds it.
   */
  private async ensureLive(collection: string): Promise<void> {
    if (this.ready.has(collection)) return;
    const alias = this.indexName(collection);
    if (await this.aliasExists(alias)) {
      this.ready.add(collection);
      return;
    }
    if (await this.client.indices.exists({ index: alias }))
      throw new SearchIndexUnavailable(
        `the Elasticsearch index ${alias} is not behind an alias (made by an older version): run \`npm run reindex\``,
      );
    if ((await this.meta.get()).collections.includes(collection))
      throw new SearchIndexUnavailable(
        `the Elasticsearch index of ${collection} (alias ${alias}) is gone: run \`npm run reindex\` to rebuild it`,
      );
    const name = this.newConcreteName(collection);
    try {
      await this.createConcrete(name, { [alias]: { is_write_index: true } });
    } catch (err) {
      // Another process made it first: keep theirs.
      await this.client.indices.delete({ index: name, ignore_unavailable: true }).catch(() => undefined);
      if (!(await this.aliasExists(alias))) throw err;
    }
    await this.meta.update((m) =>
      m.collections.includes(collection) ? m : { ...m, collections: [...m.collections, collection] },
    );
    this.ready.add(collection);
  }

  /** Where a write goes: the rebuild's index, or the live alias and, during a rebuild, the next one too. */
  private async targets(collection: string, write: IndexWrite, live: boolean): Promise<string[]> {
    if (write.rebuild) return [this.nextAlias(collection)];
    if (live) await this.ensureLive(collection);
    const next = this.nextAlias(collection);
    // Looked up at every write, after the caller read its page of changes. So the index a rebuild
    // fills misses no change: one the rebuild's scan read the record after is in the scan (whose
    // version is the sequence taken before it began); one committed after the scan read the
    // record comes in a page read after the `--next` alias existed, so it is written here too,
    // with a higher version than the scan's.
    return (await this.aliasExists(next)) ? [this.indexName(collection), next] : [this.indexName(collection)];
  }

  async index(collection: string, docs: Doc[], write: IndexWrite = {}): Promise<void> {
    return guarded('write', async () => {
      if (docs.length === 0) return;
      const documents = docs.map((doc) => ({ id: doc.id, document: documentOf(doc) }));
      for (let attempt = 0; ; attempt++) {
        const targets = await this.targets(collection, write, true);
        const ops: BulkOp[] = [];
        for (const { id, document } of documents)
          for (const index of targets)
            ops.push({ action: 'index', index, id, version: write.version, document });
        try {
          this.ledger.record(collection, write, await this.bulkWriter.write(ops));
          return;
        } catch (err) {
          if (!(err instanceof MissingIndex)) throw err;
          if (attempt > 0 || write.rebuild)
            throw new SearchIndexUnavailable(`Elasticsearch has no ${err.index}: run \`npm run reindex\``);
          // The alias went away since this process saw it (lost, or never made): look again, which
          // says to reindex when it was lost. Writes are versioned, so sending again is safe.
          this.ready.delete(collection);
        }
      }
    });
  }

  async remove(collection: string, ids: string[], write: IndexWrite = {}): Promise<void> {
    return guarded('delete', async () => {
      if (ids.length === 0) return;
      const targets = await this.targets(collection, write, false);
      const ops: BulkOp[] = [];
      for (const id of ids)
        for (const index of targets) ops.push({ action: 'delete', index, id, version: write.version });
      this.ledger.record(collection, write, await this.bulkWriter.write(ops));
    });
  }

  /** Refusals recorded so far (check-index). */
  async refusals(): Promise<Refusal[]> {
    return guarded('read of its state', async () => {
      return (await this.ledger.read()).refused;
    });
  }

  private warnedMissing = new Set<string>();

  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    const query = queryOf(predicate);
    if (query === null) return { all: true };
    const index = this.indexName(collection);
    for (let attempt = 0; ; attempt++) {
      try {
        return await searchIds(this.client, index, query, limit);
      } catch (err) {
        const status = statusOf(err);
        const types = errorTypesOf(err);
        if (status === 404 && types.includes('index_not_found_exception')) {
          // No index to narrow with (never built, or lost): the store scans.
          if (!this.warnedMissing.has(index)) {
            this.warnedMissing.add(index);
            this.logger?.warn({ index }, 'no Elasticsearch index for this collection: searches scan');
          }
          return { all: true };
        }
        if (status === 400) {
          // Our query, not the user's: it cannot narrow, the store decides alone.
          this.refusedQueries++;
          this.logger?.warn(
            { collection, kind: predicate.kind, path: predicate.path, err: describeError(err) },
            'Elasticsearch refused a search query; the store scans instead',
          );
          return { all: true };
        }
        // An index swapped out by a reindex under a running search: ask again.
        const swapped =
          (status === 404 && types.includes('search_context_missing_exception')) ||
          (err as Error).message === 'shard failures';
        if (swapped && attempt < 2) continue;
        throw new SearchIndexUnavailable(`Elasticsearch search failed: ${describeError(err)}`, {
          cause: err,
        });
      }
    }
  }

  /** Empties a collection's index: a new empty index swapped in. */
  async clear(collection: string): Promise<void> {
    await this.beginRebuild(collection);
    await this.endRebuild(collection, true);
  }

  /**
   * Starts filling a new index for the collection behind the `…--next` alias (dropping one a
   * rebuild that died left). Searches keep reading the live index; catch-ups write both.
   */
  async beginRebuild(collection: string): Promise<void> {
    return guarded('rebuild', async () => {
      const next = this.nextAlias(collection);
      for (const stale of await this.aliasTargets(next)) {
        this.logger?.warn({ index: stale }, 'dropping the index an unfinished rebuild left');
        await this.client.indices.delete({ index: stale, ignore_unavailable: true });
      }
      const name = this.newConcreteName(collection);
      await this.createConcrete(name, { [next]: { is_write_index: true } });
      this.rebuilding.set(collection, name);
    });
  }

  /**
   * Completed: makes the new index searchable, records its refusals, then moves the alias to it in
   * one atomic step and drops the old index (and the refusals of records it refused). Otherwise
   * the new index is dropped and the live one stays.
   */
  async endRebuild(collection: string, completed: boolean): Promise<void> {
    return guarded('rebuild', async () => {
      const name = this.rebuilding.get(collection);
      this.rebuilding.delete(collection);
      if (name === undefined) return;
      if (!completed) {
        await this.client.indices.delete({ index: name, ignore_unavailable: true });
        return;
      }
      const alias = this.indexName(collection);
      await this.client.indices.refresh({ index: name });
      await this.ledger.flush();
      const old = await this.aliasTargets(alias);
      const legacy = old.length === 0 && (await this.client.indices.exists({ index: alias }));
      await this.client.indices.updateAliases({
        actions: [
          ...(legacy ? [{ remove_index: { index: alias } }] : []),
          ...old.map((index) => ({ remove: { index, alias } })),
          { add: { index: name, alias, is_write_index: true } },
          { remove: { index: name, alias: this.nextAlias(collection) } },
        ],
      });
      this.ready.add(collection);
      await this.ledger.flush((m) => ({
        ...m,
        collections: m.collections.includes(collection) ? m.collections : [...m.collections, collection],
        overflow: m.overflow.filter((c) => c !== collection),
        refused: m.refused.filter((r) => r.collection !== collection || r.index === name),
      }));
      for (const index of old) await this.client.indices.delete({ index, ignore_unavailable: true });
    });
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    const index = this.indexName(collection);
    if (!(await this.client.indices.exists({ index }))) return;
    await this.client.indices.refresh({ index });
    for await (const hits of pages(
      this.client,
      index,
      { match_all: {} },
      { docvalue_fields: ['fingerprint'] },
    )) {
      yield hits.map((h) => ({ id: h._id as string, fingerprint: String(h.fields?.fingerprint?.[0] ?? '') }));
    }
  }

  async watermark(): Promise<number> {
    return guarded('read of its state', async () => {
      return (await this.ledger.read()).seq;
    });
  }

  async freshness(collection: string): Promise<Freshness> {
    return guarded('read of its state', async () => {
      const state = await this.ledger.read();
      // A collection with refusals past the cap may lack records nobody knows: read its whole log.
      if (state.overflow.includes(collection)) return { since: 0, missing: [] };
      return {
        since: state.seq,
        missing: [...new Set(state.refused.filter((r) => r.collection === collection).map((r) => r.id))],
      };
    });
  }

  /**
   * Makes everything written so far searchable, then moves the watermark (never backwards: another
   * process may be ahead) together with the refusals met on the way.
   */
  async setWatermark(seq: number): Promise<void> {
    return guarded('refresh and state write', async () => {
      await this.client.indices.refresh({ index: `${this.prefix}-*`, ignore_unavailable: true });
      await this.ledger.flush((m) => ({ ...m, seq: Math.max(m.seq, seq) }));
    });
  }

  /** Makes every write so far searchable (tests and tools; catch-up does it with the watermark). */
  async refresh(): Promise<void> {
    await this.client.indices.refresh({ index: `${this.prefix}-*`, ignore_unavailable: true });
  }

  /** Deletes every index of this prefix and its template (test suites against a real cluster). */
  async destroy(): Promise<void> {
    const indices = Object.keys(await this.client.indices.get({ index: `${this.prefix}-*` }));
    for (const index of indices) await this.client.indices.delete({ index, ignore_unavailable: true });
    await this.client.indices.deleteIndexTemplate({ name: `${this.prefix}-search-index` }, { ignore: [404] });
    this.ready.clear();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
