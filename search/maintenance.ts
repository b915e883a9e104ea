/**
 * Keeping the search index equal to the source of truth: rebuild (`reindex`), report drift
 * (`check-index`) and catch up with writes the index has not seen (freshness watermark).
 */
import type { Logger } from 'pino';
import type { Change, Doc, DocumentStore } from '../src/store/port.ts';
import type { MaintainedIndex } from './port.ts';
import { fingerprintOf } from './indexed-values.ts';

/** The collections among `collections` that `index` keeps entries for (all, for an index that does not say). */
export function coveredBy(index: Pick<MaintainedIndex, 'covers'>, collections: string[]): string[] {
  return collections.filter((c) => index.covers?.(c) ?? true);
}

export interface ReindexProgress {
  collection: string;
  done: number;
}

export interface ReindexResult {
  collection: string;
  records: number;
  seconds: number;
}

const BATCHES_IN_FLIGHT = 4;

/**
 * Rebuilds the index of one collection from `store.scan` (or `scanTexts`). The watermark is
 * taken before the scan, so writes that race with the rebuild stay "fresh" until the next
 * catch-up.
 */
export async function reindexCollection(
  store: DocumentStore,
  index: MaintainedIndex,
  collection: string,
  onProgress: (p: ReindexProgress) => void = () => {},
  batchSize = 2000,
): Promise<ReindexResult> {
  const started = performance.now();
  const seq = await store.latestSeq();
  if (index.beginRebuild) await index.beginRebuild(collection);
  else await index.clear(collection);
  let done = 0;
  const progress = (records: number) => {
    done += records;
    onProgress({ collection, done });
  };
  let completed = false;
  const inFlight: Array<Promise<void>> = [];
  try {
    if (store.scanTexts && index.indexTexts) {
      // Batches overlap: the index may prepare the next ones (off the main thread) while it
      // writes this one; they take effect, and report progress, in order.
      for await (const texts of store.scanTexts(collection, batchSize)) {
        const indexed = index.indexTexts(collection, texts).then(() => progress(texts.length));
        // Awaited in turn below; a batch failing before its turn must not count as unhandled.
        indexed.catch(() => {});
        inFlight.push(indexed);
        if (inFlight.length >= BATCHES_IN_FLIGHT) await inFlight.shift();
      }
      while (inFlight.length > 0) await inFlight.shift();
    } else {
      for await (const batch of store.scan(collection, batchSize)) {
        await index.index(collection, batch, { version: seq, rebuild: true });
        progress(batch.length);
      }
    }
    completed = true;
  } finally {
    await Promise.allSettled(inFlight);
    await index.endRebuild?.(collection, completed);
  }
  if (!index.synchronous) {
    const mark = await index.watermark();
    if (seq > mark && !(await othersChangedBetween(store, collection, mark, seq)))
      await index.setWatermark(seq);
  }
  return { collection, records: done, seconds: (performance.now() - started) / 1000 };
}

/**
 * Whether a collection other than `collection` has changes after `from` up to (at least) `to`.
 * The watermark is one mark for every collection: a rebuild of one may move it only past changes
 * of that collection, or the others' would never be caught up. (The answer may count changes a
 * little past `to`: then the mark stays, and a catch-up redoes some work, never less.)
 */
async function othersChangedBetween(
  store: DocumentStore,
  collection: string,
  from: number,
  to: number,
): Promise<boolean> {
  let since = from;
  while (since < to) {
    const page = await store.changesSince(since);
    if (page.gap || page.changes.some((c) => c.collection !== collection)) return true;
    if (page.seq <= since) return false;
    since = page.seq;
  }
  return false;
}

/**
 * Rebuilds every collection given (each with `reindexCollection`), then, when they are every
 * collection the store holds, moves the watermark to where the first rebuild began: each
 * collection was scanned after that point, so nothing before it is missing.
 */
export async function reindexCollections(
  store: DocumentStore,
  index: MaintainedIndex,
  collections: string[],
  onEach: (result: ReindexResult) => void = () => {},
  onProgress?: (p: ReindexProgress) => void,
): Promise<ReindexResult[]> {
  const seq = await store.latestSeq();
  const results: ReindexResult[] = [];
  for (const collection of collections) {
    const result = await reindexCollection(store, index, collection, onProgress);
    results.push(result);
    onEach(result);
  }
  const all = coveredBy(index, await store.nonEmptyCollections());
  if (!index.synchronous && all.every((c) => collections.includes(c)) && seq > (await index.watermark()))
    await index.setWatermark(seq);
  return results;
}

/**
 * The rebuild of derived indexes a bulk load ends with (src/store/sqlite/bulk-load.ts): each index
 * rebuilds the loaded collections it covers from the store, one after the other.
 */
export function rebuildEach(
  store: DocumentStore,
  indexes: Array<MaintainedIndex | undefined>,
  onProgress?: (p: ReindexProgress) => void,
): (collections: string[]) => Promise<void> {
  return async (collections) => {
    for (const index of indexes) {
      if (!index) continue;
      const covered = coveredBy(index, collections);
      if (covered.length > 0) await reindexCollections(store, index, covered, undefined, onProgress);
    }
  };
}

export interface DriftReport {
  collection: string;
  checked: number;
  /** In the source of truth, not in the index. */
  missing: string[];
  /** In both, with a different fingerprint. */
  stale: string[];
  /** In the index only. */
  extra: string[];
  /** Totals (the id lists stop at REPORT_CAP). */
  counts: { missing: number; stale: number; extra: number };
}

const REPORT_CAP = 1000;

/** Compares a collection's records with the index by walking both in id order. */
export async function checkCollection(
  store: DocumentStore,
  index: MaintainedIndex,
  collection: string,
): Promise<DriftReport> {
  const indexed = new Map<string, string>();
  for await (const batch of index.fingerprints(collection))
    for (const r of batch) indexed.set(r.id, r.fingerprint);
  const report: DriftReport = {
    collection,
    checked: 0,
    missing: [],
    stale: [],
    extra: [],
    counts: { missing: 0, stale: 0, extra: 0 },
  };
  const push = (list: string[], id: string) => {
    if (list.length < REPORT_CAP) list.push(id);
  };
  for await (const batch of store.scan(collection, 2000)) {
    for (const doc of batch) {
      report.checked++;
      const fp = indexed.get(doc.id);
      if (fp === undefined) {
        report.counts.missing++;
        push(report.missing, doc.id);
      } else {
        if (fp !== fingerprintOf(doc)) {
          report.counts.stale++;
          push(report.stale, doc.id);
        }
        indexed.delete(doc.id);
      }
    }
  }
  report.counts.extra = indexed.size;
  for (const id of indexed.keys()) push(report.extra, id);
  return report;
}

export function hasDrift(r: DriftReport): boolean {
  return r.counts.missing + r.counts.stale + r.counts.extra > 0;
}

export interface CatchUpOptions {
  /** Change-log pages to read at most (default: every page up to the newest change). */
  pages?: number;
}

/** Records read from the store and written to the index at a time, so memory stays bounded. */
const CATCH_UP_SLICE = 1000;

/**
 * Indexes every write since the index's watermark, a page of the change log at a time, advancing
 * the watermark after each page. Needed only for indexes written outside the store's transaction
 * (Elasticsearch, or FTS5 beside MongoDB). Each page's writes carry the page's last sequence as
 * their version: the records are read after it, so they are at least that new, and an index that
 * keeps versions lets no slower catch-up (another process) put an older state back.
 */
export async function catchUp(
  store: DocumentStore,
  index: MaintainedIndex,
  options: CatchUpOptions = {},
): Promise<number> {
  if (index.synchronous) return 0;
  let since = await index.watermark();
  let done = 0;
  for (let pages = 0; pages < (options.pages ?? Infinity); pages++) {
    const { changes, seq, gap, more } = await store.changesSince(since);
    if (gap) {
      // The log no longer reaches back to the watermark: rebuild what the index covers.
      const covered = coveredBy(index, await store.nonEmptyCollections());
      const results = await reindexCollections(store, index, covered);
      return done + results.reduce((n, r) => n + r.records, 0);
    }
    await applyChanges(store, index, changes, seq);
    done += changes.length;
    if (seq <= since) break;
    await index.setWatermark(seq);
    since = seq;
    if (!more) break;
  }
  return done;
}

/** Writes one page of changes to the index, as versions `version` of the records. */
async function applyChanges(
  store: DocumentStore,
  index: MaintainedIndex,
  changes: Change[],
  version: number,
): Promise<void> {
  const byCollection = new Map<string, { upserted: string[]; deleted: string[] }>();
  for (const c of changes) {
    let entry = byCollection.get(c.collection);
    if (!entry) byCollection.set(c.collection, (entry = { upserted: [], deleted: [] }));
    (c.deleted ? entry.deleted : entry.upserted).push(c.id);
  }
  for (const [collection, { upserted, deleted }] of byCollection) {
    if (index.covers && !index.covers(collection)) continue;
    const removed = [...deleted];
    for (let i = 0; i < upserted.length; i += CATCH_UP_SLICE) {
      const slice = upserted.slice(i, i + CATCH_UP_SLICE);
      const docs: Doc[] = [];
      for (let j = 0; j < slice.length; j += 500) {
        const batch = await Promise.all(slice.slice(j, j + 500).map((id) => store.getById(collection, id)));
        for (const d of batch) if (d !== null) docs.push(d);
      }
      // An id listed as upserted but gone by now was deleted since: remove it too.
      const found = new Set(docs.map((d) => d.id));
      removed.push(...slice.filter((id) => !found.has(id)));
      if (docs.length > 0) await index.index(collection, docs, { version });
    }
    for (let i = 0; i < removed.length; i += CATCH_UP_SLICE)
      await index.remove(collection, removed.slice(i, i + CATCH_UP_SLICE), { version });
  }
}

/**
 * Runs `catchUp` every `intervalMs` for an index written outside the store's transaction, so
 * writes from any process (the loader, other service processes) become indexed and the fresh
 * set the planner adds stays small. Returns a stop function.
 */
export function startCatchUpLoop(
  store: DocumentStore,
  index: MaintainedIndex,
  onError: (err: unknown) => void,
  intervalMs = 2000,
): () => void {
  if (index.synchronous || intervalMs <= 0) return () => {};
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    catchUp(store, index)
      .catch(onError)
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Keeps a non-synchronous index catching up until it is closed; returns the same index. */
export function keepCaughtUp<T extends MaintainedIndex>(
  index: T,
  store: DocumentStore,
  logger: Logger,
  everyMs: number,
): T {
  const stop = startCatchUpLoop(
    store,
    index,
    (err) => logger.warn({ err, index: index.constructor.name }, 'index catch-up failed'),
    everyMs,
  );
  const close = index.close.bind(index);
  index.close = async () => {
    stop();
    await close();
  };
  return index;
}
