/**
 * Removing entries of the embedded search index wholesale (a collection cleared or rebuilt from
 * empty) and pruning the groups and strings no record uses any more (the end of a rebuild).
 */
import type { Database } from 'better-sqlite3';
import type { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import { OWNERS_OF_COLLECTION, ROWS_OF_OTHERS } from './schema.ts';
import { STRINGS_GENERATION } from './strings-generation.ts';

/**
 * Removes a collection's records and map rows. When they are most of the map, the other
 * collections' rows are set aside, the map is emptied in one step (SQLite drops its pages
 * instead of deleting rows one by one) and they are put back.
 */
export function dropEntries(db: Database, statements: StatementCache, collection: string): void {
  if (isMostOfMap(statements, collection)) {
    db.exec('DROP TABLE IF EXISTS temp.search_values_kept');
    statements.get(`CREATE TEMP TABLE search_values_kept AS ${ROWS_OF_OTHERS}`).run(collection, collection);
    db.exec('DELETE FROM search_values');
    db.exec(
      'INSERT INTO search_values(record, path, string) SELECT record, path, string FROM temp.search_values_kept ' +
        'ORDER BY record, path, string; DROP TABLE temp.search_values_kept;',
    );
  } else {
    statements
      .get(`DELETE FROM search_values WHERE record IN (${OWNERS_OF_COLLECTION})`)
      .run(collection, collection);
  }
  statements.get('DELETE FROM search_records WHERE collection = ?').run(collection);
  statements.get('DELETE FROM search_groups WHERE collection = ?').run(collection);
}

/** Whether a collection holds at least half of the indexed records (so also when there are none). */
export function isMostOfMap(statements: StatementCache, collection: string): boolean {
  const mine = statements
    .get('SELECT count(*) FROM search_records WHERE collection = ?')
    .pluck()
    .get(collection) as number;
  const all = statements.get('SELECT count(*) FROM search_records').pluck().get() as number;
  return mine * 2 >= all;
}

/** Removes groups no record points at any more, with their map rows. */
export function pruneGroups(db: Database, statements: StatementCache): number {
  db.exec(
    'CREATE TEMP TABLE IF NOT EXISTS search_orphan_groups (rowid INTEGER PRIMARY KEY); DELETE FROM temp.search_orphan_groups;',
  );
  const found = statements
    .get(
      'INSERT INTO temp.search_orphan_groups(rowid) SELECT rowid FROM search_groups g ' +
        'WHERE NOT EXISTS (SELECT 1 FROM search_records r WHERE r.grp = g.rowid)',
    )
    .run().changes;
  if (found > 0) {
    db.exec(
      'DELETE FROM search_values WHERE record IN (SELECT -rowid FROM temp.search_orphan_groups); ' +
        'DELETE FROM search_groups WHERE rowid IN (SELECT rowid FROM temp.search_orphan_groups);',
    );
  }
  db.exec('DELETE FROM temp.search_orphan_groups');
  return found;
}

/** Removes strings no record holds any more (with `onlyCleared`, among those a rebuild cleared). */
export function pruneStrings(db: Database, statements: StatementCache, onlyCleared = false): number {
  db.exec(
    'CREATE TEMP TABLE IF NOT EXISTS search_orphans (rowid INTEGER PRIMARY KEY); DELETE FROM temp.search_orphans;',
  );
  const found = statements
    .get(
      'INSERT INTO temp.search_orphans(rowid) SELECT rowid FROM search_strings s ' +
        `WHERE ${onlyCleared ? 's.rowid IN (SELECT rowid FROM temp.search_cleared) AND ' : ''}` +
        'NOT EXISTS (SELECT 1 FROM search_values v WHERE v.string = s.rowid)',
    )
    .run().changes;
  if (found > 0) {
    // The trigram index keeps no content: FTS5 is told each string's value to remove its entries.
    db.exec(
      "INSERT INTO search_trigram(search_trigram, rowid, value) SELECT 'delete', rowid, value FROM search_strings " +
        'WHERE rowid IN (SELECT rowid FROM temp.search_orphans); ' +
        'DELETE FROM search_strings WHERE rowid IN (SELECT rowid FROM temp.search_orphans);',
    );
    statements.get(STRINGS_GENERATION.raise).run();
  }
  db.exec('DELETE FROM temp.search_orphans');
  return found;
}
