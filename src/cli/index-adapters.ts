/**
 * The adapters the index maintenance tools (`reindex`, `check-index`) work on: the configured
 * store, search index and edge index, with no background catch-up (the tool does the work itself)
 * and warnings only, on standard error, so standard output stays the tool's report.
 */
import { createLogger } from '../logger.ts';
import { loadConfig } from '../config.ts';
import { openAdapters } from '../adapters.ts';

export async function openIndexAdapters() {
  const config = loadConfig();
  const logger = createLogger(
    { level: process.env.LOG_LEVEL || 'warn', format: config.logFormat },
    process.stderr,
  );
  const { store, searchIndex, edgeIndex } = await openAdapters(config, logger, { catchUpEveryMs: 0 });
  return { store, index: searchIndex, edges: edgeIndex };
}
