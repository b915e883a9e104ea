/**
 * The bench's one table: every figure the issue's targets name, at each size, ours beside its
 * peer (bare `node:http`, PostgreSQL, or our own by-id request), the ratio the target is written
 * in, the target and whether it holds in this run.
 */
export interface SummaryRow {
  measure: string;
  size: number;
  ours: string;
  peer: string;
  ratio: string;
  target: string;
  /** `yes`, `no`, or `-` when there is nothing to compare (no peer measured). */
  holds: string;
}

const rows: SummaryRow[] = [];

export const summaryRows = (): readonly SummaryRow[] => rows;

/**
 * Adds a row whose ratio is `ours / peer` (or `peer / ours` for rates, `higherIsBetter`) and holds
 * when that ratio is at most `limit`.
 */
export function summarize(row: {
  measure: string;
  size: number;
  ours: number;
  peer: number;
  unit: string;
  limit: number;
  target: string;
  higherIsBetter?: boolean;
  peerLabel?: string;
  digits?: number;
}): void {
  const r = row.higherIsBetter ? row.peer / row.ours : row.ours / row.peer;
  const known = Number.isFinite(r);
  const fmt = (x: number) =>
    Number.isFinite(x)
      ? `${x.toLocaleString('en-US', { maximumFractionDigits: row.digits ?? 2 })} ${row.unit}`
      : '-';
  rows.push({
    measure: row.measure,
    size: row.size,
    ours: fmt(row.ours),
    peer: `${row.peerLabel ? `${row.peerLabel}: ` : ''}${fmt(row.peer)}`,
    ratio: known ? `${r.toFixed(2)}${row.higherIsBetter ? ' (slower)' : ''}` : '-',
    target: row.target,
    holds: known ? (r <= row.limit ? 'yes' : 'no') : '-',
  });
}

/** Adds a row with an absolute target (`ours <= limit`). */
export function summarizeAbsolute(row: {
  measure: string;
  size: number;
  ours: number;
  unit: string;
  limit: number;
  peer?: string;
}): void {
  rows.push({
    measure: row.measure,
    size: row.size,
    ours: `${row.ours.toLocaleString('en-US', { maximumFractionDigits: 2 })} ${row.unit}`,
    peer: row.peer ?? '-',
    ratio: '-',
    target: `<= ${row.limit.toLocaleString('en-US')} ${row.unit}`,
    holds: row.ours <= row.limit ? 'yes' : 'no',
  });
}
