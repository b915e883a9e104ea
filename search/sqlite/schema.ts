/**
 * The tables of the embedded search index (described in `fts-index.ts`), the upgrade of files
 * written by earlier versions, and the queries of a collection's map owners.
 */
import type { Database } from 'better-sqlite3';

export const BY_STRING_INDEX =
  'CREATE INDEX IF NOT EXISTS search_values_by_string ON search_values(string, path, record)';
const BY_GROUP_INDEX = 'CREATE INDEX IF NOT EXISTS search_records_by_group ON search_records(grp)';

/** The trigram index of the strings; files from before it had positions are rebuilt (createSchema). */
const TRIGRAM_TABLE =
  'CREATE VIRTUAL TABLE IF NOT EXISTS search_trigram USING fts5(' +
  "value, content = '', detail = none, columnsize = 0, tokenize = 'trigram case_sensitive 0')";

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_strings (
    rowid INTEGER PRIMARY KEY,
    value TEXT NOT NULL UNIQUE
  );
  -- Contentless, without positions (detail = none) or column sizes (columnsize = 0): a MATCH is
  -- an AND/OR of single trigrams (match-plan.ts) and never a phrase, and no query ranks. A string
  -- is added by the statement after its own (map-writer.ts), and removed with FTS5's 'delete'
  -- command and its value (pruning.ts).
  ${TRIGRAM_TABLE};
  CREATE VIRTUAL TABLE IF NOT EXISTS search_trigram_vocab USING fts5vocab(search_trigram, 'row');
  CREATE TABLE IF NOT EXISTS search_records (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    grp INTEGER,
    UNIQUE (collection, id)
  );
  -- A distinct set of recurring pairs, found by a hash of its pairs.
  CREATE TABLE IF NOT EXISTS search_groups (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (collection, hash)
  );
  CREATE TABLE IF NOT EXISTS search_paths (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE
  );
  -- Integer keys only: this table has a row per (owner, path, string) and its write cost sets the build rate.
  -- The owner (column "record") is a search_records key, or minus a search_groups key.
  CREATE TABLE IF NOT EXISTS search_values (
    record INTEGER NOT NULL,
    path INTEGER NOT NULL,
    string INTEGER NOT NULL,
    PRIMARY KEY (record, path, string)
  ) WITHOUT ROWID;
  ${BY_STRING_INDEX};
  CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Map owners of a collection: its records and (negated) its groups; binds the collection twice. */
export const OWNERS_OF_COLLECTION =
  'SELECT rowid FROM search_records WHERE collection = ? UNION ALL SELECT -rowid FROM search_groups WHERE collection = ?';
/** Map rows of the other collections, read owner by owner through the map's key; binds it twice. */
export const ROWS_OF_OTHERS =
  'SELECT v.record, v.path, v.string FROM (SELECT rowid AS owner FROM search_records WHERE collection != ? ' +
  'UNION ALL SELECT -rowid FROM search_groups WHERE collection != ?) o JOIN search_values v ON v.record = o.owner';

/**
 * Creates the tables missing from `db` and upgrades those of earlier versions (caller's
 * transaction).
 */
export function createSchema(db: Database): void {
  // Files from before strings were tokenized a batch at a time: the insert trigger that did it
  // string by string goes (it would index each string twice).
  db.exec('DROP TRIGGER IF EXISTS search_strings_added');
  // Files from before word predicates were answered by trigrams: drop the words table.
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'search_words'").get() !== undefined)
    db.exec('DROP TABLE search_words;');
  // Files from before the trigram index lost its positions (2.6 times its size at 10^5 strings,
  // with a column-size row per string): it is built again from the strings, once.
  const trigrams = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'search_trigram'").pluck().get() as
    string | undefined;
  const rebuildTrigrams = trigrams !== undefined && !trigrams.includes('detail = none');
  if (rebuildTrigrams) db.exec('DROP TABLE IF EXISTS search_trigram_vocab; DROP TABLE search_trigram;');
  db.exec(SCHEMA);
  if (rebuildTrigrams)
    db.exec('INSERT INTO search_trigram(rowid, value) SELECT rowid, value FROM search_strings');
  // Files from before groups: every map row is a record's own, which stays valid.
  const columns = db.prepare("SELECT name FROM pragma_table_info('search_records')").pluck().all();
  if (!columns.includes('grp')) db.exec('ALTER TABLE search_records ADD COLUMN grp INTEGER');
  db.exec(BY_GROUP_INDEX);
}
