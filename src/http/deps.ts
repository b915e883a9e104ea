import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DocumentStore } from '../store/port.ts';
import type { SearchIndex } from '../../search/port.ts';
import type { EdgeIndex } from '../provenance/port.ts';

/** Everything the HTTP layer needs, built once by `main.ts` (or a test) and passed to `buildApp`. */
export interface AppDeps {
  config: Config;
  store: DocumentStore;
  searchIndex: SearchIndex;
  /** The provenance graph's edges. */
  edgeIndex: EdgeIndex;
  logger: Logger;
}
