/** Reading a store file's tables whole, for tests that compare two stores written two ways. */
import Database from 'better-sqlite3';

/** Every table of the file but the short-lived state, row by row (FTS5 tables by their shadow tables). */
export function tables(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    const names = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' " +
          "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    return Object.fromEntries(
      names.filter((n) => n !== 'state').map((n) => [n, db.prepare(`SELECT * FROM "${n}"`).raw().all()]),
    );
  } finally {
    db.close();
  }
}
