/**
 * Short-lived shared state (page tokens, cursors, OIDC artifacts) in the embedded file, with
 * expiry honoured on every read and expired rows swept periodically.
 */
import path from 'node:path';
import type { Database, Statement } from 'better-sqlite3';
import type { StateStore } from '../port.ts';

/** JSON fields the OIDC adapter looks records up by; each gets an expression index. */
export const INDEXED_STATE_FIELDS = ['grantId', 'uid', 'userCode'] as const;

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function createStateSchema(db: Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS state (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      expires_at INTEGER,
      PRIMARY KEY (kind, key)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS state_expiry ON state(expires_at) WHERE expires_at IS NOT NULL;
  `);
  for (const field of INDEXED_STATE_FIELDS) {
    db.exec(
      `CREATE INDEX IF NOT EXISTS state_by_${field} ON state(kind, json_extract(value, '$.${field}')) ` +
        `WHERE json_extract(value, '$.${field}') IS NOT NULL`,
    );
  }
}

/** The state's file beside the records' file: `nmdc-state.sqlite` for `nmdc.sqlite`. */
export function stateFileBeside(file: string): string {
  return path.join(path.dirname(file), `${path.basename(file, '.sqlite')}-state.sqlite`);
}

/**
 * Moves the state an older version kept in the records' file (`db`) into the state's own file,
 * once: its rows are copied (rows already there are kept) and its table dropped, the drop in one
 * transaction with the copy's read, so a process that dies in between copies again.
 */
export function moveStateOut(db: Database, stateDb: Database): void {
  const left = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'state'").pluck();
  if (left.get() === undefined) return;
  db.transaction(() => {
    if (left.get() === undefined) return; // another process moved it meanwhile
    const rows = db.prepare('SELECT kind, key, value, expires_at FROM state').raw().all() as unknown[][];
    const insert = stateDb.prepare(
      'INSERT OR IGNORE INTO state(kind, key, value, expires_at) VALUES (?, ?, ?, ?)',
    );
    stateDb.transaction(() => {
      for (const row of rows) insert.run(...row);
    })();
    db.exec('DROP TABLE state');
  }).immediate();
}

export class SqliteStateStore implements StateStore {
  private readonly putStmt: Statement;
  private readonly getStmt: Statement;
  private readonly deleteStmt: Statement;
  private readonly sweepStmt: Statement;
  private readonly incrementStmt: Statement;
  private readonly byField = new Map<string, { find: Statement; remove: Statement }>();

  /**
   * `write` runs each write: the document store's waits for other connections to the state's file
   * without holding the event loop (busy.ts); by default, at once.
   */
  constructor(
    private readonly db: Database,
    private readonly write: <T>(f: () => T) => Promise<T> = async (f) => f(),
  ) {
    this.putStmt = db.prepare(
      'INSERT INTO state(kind, key, value, expires_at) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT(kind, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
    );
    this.getStmt = db.prepare(
      'SELECT value FROM state WHERE kind = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)',
    );
    this.deleteStmt = db.prepare('DELETE FROM state WHERE kind = ? AND key = ?');
    this.sweepStmt = db.prepare('DELETE FROM state WHERE expires_at IS NOT NULL AND expires_at <= ?');
    // One statement, so concurrent processes never lose a count: SQLite runs it under the write
    // lock. The right-hand sides read the row as it was, so an expired counter restarts at 1.
    this.incrementStmt = db.prepare(
      "INSERT INTO state(kind, key, value, expires_at) VALUES (@kind, @key, '1', @expiresAt) " +
        'ON CONFLICT(kind, key) DO UPDATE SET ' +
        "value = CASE WHEN state.expires_at IS NOT NULL AND state.expires_at <= @now THEN '1' " +
        'ELSE CAST(CAST(state.value AS INTEGER) + 1 AS TEXT) END, ' +
        'expires_at = CASE WHEN state.expires_at IS NOT NULL AND state.expires_at <= @now ' +
        'THEN excluded.expires_at ELSE state.expires_at END ' +
        'RETURNING value',
    );
  }

  private fieldStatements(field: string): { find: Statement; remove: Statement } {
    let stmts = this.byField.get(field);
    if (!stmts) {
      if (!FIELD_NAME.test(field)) throw new Error(`invalid state field name ${JSON.stringify(field)}`);
      // The literal expression matches the expression index for the indexed fields.
      const expr = `json_extract(value, '$.${field}')`;
      stmts = {
        find: this.db.prepare(
          `SELECT key, value FROM state WHERE kind = ? AND ${expr} = ? AND (expires_at IS NULL OR expires_at > ?)`,
        ),
        remove: this.db.prepare(`DELETE FROM state WHERE kind = ? AND ${expr} = ?`),
      };
      this.byField.set(field, stmts);
    }
    return stmts;
  }

  async put(kind: string, key: string, value: unknown, ttlSeconds?: number): Promise<void> {
    const expiresAt = ttlSeconds === undefined ? null : Date.now() + ttlSeconds * 1000;
    const text = JSON.stringify(value ?? null);
    await this.write(() => this.putStmt.run(kind, key, text, expiresAt));
  }

  async get<T = unknown>(kind: string, key: string): Promise<T | undefined> {
    const row = this.getStmt.get(kind, key, Date.now()) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async delete(kind: string, key: string): Promise<void> {
    await this.write(() => this.deleteStmt.run(kind, key));
  }

  async findBy<T = unknown>(
    kind: string,
    field: string,
    equals: string,
  ): Promise<Array<{ key: string; value: T }>> {
    const rows = this.fieldStatements(field).find.all(kind, equals, Date.now()) as Array<{
      key: string;
      value: string;
    }>;
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }));
  }

  async deleteBy(kind: string, field: string, equals: string): Promise<number> {
    return this.write(() => this.fieldStatements(field).remove.run(kind, equals).changes);
  }

  async increment(kind: string, key: string, ttlSeconds: number): Promise<number> {
    const row = await this.write(() => {
      const now = Date.now();
      return this.incrementStmt.get({ kind, key, now, expiresAt: now + ttlSeconds * 1000 }) as {
        value: string;
      };
    });
    return Number(row.value);
  }

  /** Removes expired rows; returns how many. */
  sweep(): number {
    return this.sweepStmt.run(Date.now()).changes;
  }
}
