/**
 * Prepared statements kept by their SQL text, so a statement is compiled once per connection.
 * A cache of more than `limit` statements (SQL built with varying shapes) starts over.
 */
import type { Database, Statement } from 'better-sqlite3';

/** A value bound to a statement's parameter. */
export type SqlParam = string | number;

export class StatementCache {
  private readonly statements = new Map<string, Statement>();

  constructor(
    private readonly db: Database,
    private readonly limit = 500,
  ) {}

  get(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      if (this.statements.size >= this.limit) this.statements.clear();
      this.statements.set(sql, s);
    }
    return s;
  }

  clear(): void {
    this.statements.clear();
  }
}
