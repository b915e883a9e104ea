/**
 * The change log: one row per record written or deleted, numbered in commit order, which search
 * indexes and caches read to catch up (`changesSince`). Old rows are swept past a retention
 * window; a reader asking from before the sweep learns that it missed changes (`gap`).
 */
import type { Database as Db } from 'better-sqlite3';
import type { ChangePage } from '../port.ts';
import type { StatementCache } from './statement-cache.ts';

export const CHANGE_LOG_SCHEMA = `
  CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    deleted INTEGER NOT NULL
  );
`;

/** Change-log rows one transaction of a sweep removes at most. */
export const SWEEP_SLICE = 10_000;
/** Change-log rows one `changesSince` reads at most. */
export const CHANGES_PAGE = 100_000;

export class ChangeLog {
  constructor(
    private readonly db: Db,
    private readonly statements: StatementCache,
    /** Change-log rows kept for `changesSince`. */
    private readonly retained: number,
    /** Change-log rows one `changesSince` reads at most (its page says `more` when others follow). */
    private readonly page: number = CHANGES_PAGE,
  ) {}

  /** Logs a write or delete of a record (inside the caller's transaction); returns its sequence number. */
  append(collection: string, id: string, deleted: boolean): number {
    const sql = `INSERT INTO changes(collection, id, deleted) VALUES (?, ?, ${deleted ? 1 : 0})`;
    return Number(this.statements.get(sql).run(collection, id).lastInsertRowid);
  }

  /** Removes change-log rows older than the retention window. */
  sweep(): void {
    while (this.sweepSome()) {
      // Each slice in its own transaction.
    }
  }

  /**
   * Removes the oldest change-log rows past the retention window, at most `slice` of them in one
   * transaction (a sweep after a large write would otherwise hold the file and the process for as
   * long as it takes to delete them all); true when more are left to remove.
   */
  sweepSome(slice = SWEEP_SLICE): boolean {
    return this.db
      .transaction(() => {
        const cutoff = this.latestSeq() - this.retained;
        if (cutoff <= this.prunedThrough()) return false;
        const oldest = this.statements.get('SELECT min(seq) FROM changes').pluck().get() as number | null;
        // Sequence numbers only grow, some skipped: at most `slice` rows lie in this range.
        const through = oldest === null ? cutoff : Math.min(cutoff, oldest + slice - 1);
        this.statements.get('DELETE FROM changes WHERE seq <= ?').run(through);
        // Remembered so a reader asking from before it learns that changes are missing (`gap`).
        this.statements
          .get(
            "INSERT INTO meta(key, value) VALUES ('changes_pruned_through', ?) " +
              'ON CONFLICT(key) DO UPDATE SET value = excluded.value',
          )
          .run(String(through));
        return through < cutoff;
      })
      .immediate();
  }

  /** The newest change-log sequence number the sweep has removed (0 when none). */
  prunedThrough(): number {
    const row = this.statements.get("SELECT value FROM meta WHERE key = 'changes_pruned_through'").get() as
      { value: string } | undefined;
    return row ? Number(row.value) : 0;
  }

  /** Records changed after `sinceSeq`, each once with its latest state, in the order of their last change. */
  changesSince(sinceSeq: number, limit = this.page): ChangePage {
    const page = Math.max(1, Math.min(limit, this.page));
    if (sinceSeq < this.prunedThrough()) {
      return { changes: [], seq: this.latestSeq(), gap: true };
    }
    // One row past the page tells whether more follow.
    const rows = this.statements
      .get('SELECT seq, collection, id, deleted FROM changes WHERE seq > ? ORDER BY seq LIMIT +?')
      .all(sinceSeq, page + 1) as Array<{
      seq: number;
      collection: string;
      id: string;
      deleted: number;
    }>;
    const more = rows.length > page;
    if (more) rows.length = page;
    const latest = new Map<string, { collection: string; id: string; deleted: boolean }>();
    for (const r of rows) {
      const key = `${r.collection}\u0000${r.id}`;
      latest.delete(key);
      latest.set(key, { collection: r.collection, id: r.id, deleted: r.deleted === 1 });
    }
    const seq = rows.length > 0 ? rows[rows.length - 1]!.seq : Math.max(sinceSeq, this.latestSeq());
    return more ? { changes: [...latest.values()], seq, more } : { changes: [...latest.values()], seq };
  }

  latestSeq(): number {
    return (this.statements.get('SELECT max(seq) AS m FROM changes').get() as { m: number | null }).m ?? 0;
  }
}
