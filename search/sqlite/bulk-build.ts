/**
 * The FTS5 merge settings of the embedded search index, turned down while a rebuild builds a
 * collection from empty and put back when it ends (or when the index next opens, if the process
 * died meanwhile).
 */
import type { Database } from 'better-sqlite3';

/**
 * FTS5 merge settings (with SQLite's defaults) a build from empty turns down while it writes:
 * segments are then merged when the build ends rather than over and over while it grows.
 */
const MERGE_DEFAULTS = { automerge: 4, crisismerge: 16, usermerge: 4 } as const;
const BULK_MERGE = { automerge: 0, crisismerge: 64, usermerge: 16 } as const;
type MergeSetting = keyof typeof MERGE_DEFAULTS;
/** search_meta key set while a build from empty has the merge settings turned down (see `restoreAfterBulkBuild`). */
const BULK_BUILD_KEY = 'bulk_build';

/** The merge settings stored in the FTS5 table (undefined: SQLite's default). */
function mergeSettings(db: Database): Record<MergeSetting, number | undefined> {
  const read = db.prepare('SELECT v FROM search_trigram_config WHERE k = ?').pluck();
  const out = {} as Record<MergeSetting, number | undefined>;
  for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[]) out[k] = read.get(k) as number | undefined;
  return out;
}

function setMergeSettings(db: Database, values: Record<MergeSetting, number>): void {
  const set = db.prepare('INSERT INTO search_trigram(search_trigram, rank) VALUES (?, ?)');
  // As integers: FTS5 refuses a REAL, which is how a JS number is bound.
  for (const [k, v] of Object.entries(values)) set.run(k, BigInt(v));
}

/** Turns the merge settings down for a build from empty, remembering them (caller's transaction). */
export function turnDownMerging(db: Database): void {
  const saved = mergeSettings(db);
  const remember = db.prepare(
    'INSERT INTO search_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
  );
  // Saved only by the first build: one that died left the turned-down values in place.
  if (db.prepare('SELECT 1 FROM search_meta WHERE key = ?').get(BULK_BUILD_KEY) === undefined) {
    for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[])
      remember.run(`${BULK_BUILD_KEY}_${k}`, saved[k] ?? MERGE_DEFAULTS[k]);
    remember.run(BULK_BUILD_KEY, 1);
  }
  setMergeSettings(db, BULK_MERGE);
}

/**
 * Puts back the merge settings a build from empty turned down, checks that they read back, and
 * merges the segments the build left into one (caller's transaction). Left as they were, the first
 * small write after the build paid for merging them, inside its own transaction: a one-record
 * update after a load of 50,000 biosamples took 270 ms (150-230 ms of it one map row's delete,
 * the statement at which FTS5 flushed and merged), 106 ms with the segments merged beforehand
 * (which took 201 ms, here). Nothing to do when no build left the settings down.
 */
export function restoreAfterBulkBuild(db: Database): void {
  const meta = db.prepare('SELECT value FROM search_meta WHERE key = ?').pluck();
  if (meta.get(BULK_BUILD_KEY) === undefined) return;
  const wanted = {} as Record<MergeSetting, number>;
  for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[])
    wanted[k] = (meta.get(`${BULK_BUILD_KEY}_${k}`) as number | undefined) ?? MERGE_DEFAULTS[k];
  setMergeSettings(db, wanted);
  const now = mergeSettings(db);
  for (const k of Object.keys(wanted) as MergeSetting[])
    if ((now[k] ?? MERGE_DEFAULTS[k]) !== wanted[k])
      throw new Error(`search index: FTS5 setting ${k} reads ${now[k]} after restoring ${wanted[k]}`);
  db.prepare("INSERT INTO search_trigram(search_trigram) VALUES ('optimize')").run();
  db.prepare("DELETE FROM search_meta WHERE key = ? OR key LIKE 'bulk\\_build\\_%' ESCAPE '\\'").run(
    BULK_BUILD_KEY,
  );
}

/** True while a build from empty has turned settings down or dropped the by-string index. */
export function bulkBuildPending(db: Database): boolean {
  const marked = db.prepare('SELECT 1 FROM search_meta WHERE key = ?').get(BULK_BUILD_KEY) !== undefined;
  const indexed =
    db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'search_values_by_string'")
      .get() !== undefined;
  return marked || !indexed;
}
