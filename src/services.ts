/**
 * The composition root: every service of the app, built once from the config, on the adapters
 * (MongoDB or SQLite, Elasticsearch or FTS5) that src/adapters.ts chooses; capabilities receive
 * what they need from `Services` and never build their own store, writer or planner. One `start`
 * begins the background work, one `stop` ends it and closes what was opened here. `main.ts`,
 * the tests (test/support/server.ts) and the benchmarks build the same graph.
 */
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { openAdapters, type Adapters } from './adapters.ts';
import { RecordWriter } from '../search/writer.ts';
import { QueryPlanner } from './query/planner/planner.ts';
import { Allowances, ensureAccounts, type Accounts } from './accounts/index.ts';
import { createAuth, type Auth } from './auth/index.ts';
import { endSignInsOf } from './auth/state-adapter.ts';
import { openStoredObjects, type StoredObjects } from './objects/stored-objects.ts';
import { ensureCatalog } from './workflows/catalog.ts';
import { TriggerDispatcher } from './workflows/triggers.ts';
import { prepareData } from './startup.ts';
import { LargeAnswers } from './large-answers.ts';

export interface Services extends Adapters {
  config: Config;
  logger: Logger;
  /** Every write of metadata records: the store, then the search index and the edges. */
  writer: RecordWriter;
  /** One plan per query, for every read of metadata records. */
  planner: QueryPlanner;
  /** Users, sites and site clients. */
  accounts: Accounts;
  /** Who may do what beyond reading: `await allowances.permits(principal, action)`. */
  allowances: Allowances;
  /** The OIDC provider, the `/token` logins and who sends a bearer token. */
  auth: Auth;
  /** Submitted payloads, changesheets and DRS objects' bytes. */
  storedObjects: StoredObjects;
  /** Turns queued trigger firings into jobs. */
  triggers: TriggerDispatcher;
  /** Pages of more than 10,000 records, read and answered a few at a time (large-answers.ts). */
  largeAnswers: LargeAnswers;
  /** Begins the background work (trigger dispatch). */
  start(): void;
  /** Ends the background work, then closes what `openServices` opened (adapters passed in stay open). */
  stop(): Promise<void>;
}

export interface OpenServicesOptions {
  /** Adapters to build on instead of opening them from the config (tests, benchmarks). */
  adapters?: Adapters;
  /**
   * Finish an interrupted bulk load and load the demo data into an empty store first (see
   * startup.ts). Off in server processes forked after the primary prepared the store.
   */
  prepareData?: boolean;
}

export async function openServices(
  config: Config,
  logger: Logger,
  options: OpenServicesOptions = {},
): Promise<Services> {
  const adapters = options.adapters ?? (await openAdapters(config, logger));
  const closeAdapters = async () => {
    if (options.adapters) return;
    await adapters.edgeIndex.close();
    await adapters.searchIndex.close();
    await adapters.store.close();
  };
  const { store, searchIndex, edgeIndex } = adapters;
  try {
    if (options.prepareData) await prepareData({ config, store, searchIndex, edgeIndex, logger });
    const planner = new QueryPlanner(store, searchIndex, { logger });
    const writer = new RecordWriter(store, [searchIndex, edgeIndex]);
    // Cached counts follow small checked writes instead of counting again. On the embedded store
    // only: its counts are exactly what the compiled filter decides, with which they are adjusted.
    if (store.engine === 'sqlite') writer.observe(planner.writeNotes);
    // A changed password also ends the account's sign-in sessions at the provider.
    const accounts = await ensureAccounts({ config, store, logger }, async (change) => {
      if (change.kind === 'user') await endSignInsOf(store.state, change.id);
    });
    const auth = await createAuth({ config, store, logger }, accounts);
    await ensureCatalog(store, config.workflowCatalog);
    // Submitted payloads (and changesheets) are kept as stored objects; one instance for every route.
    const storedObjects = await openStoredObjects(config.dataDir, store, (err) =>
      logger.warn({ err }, 'sweeping unreferenced stored-object bytes failed'),
    );
    // Turns queued trigger firings into jobs: at start, after each PUT of object types, and every few seconds.
    const triggers = new TriggerDispatcher(store, logger);
    return {
      config,
      logger,
      ...adapters,
      writer,
      planner,
      accounts,
      allowances: new Allowances(store),
      auth,
      storedObjects,
      triggers,
      largeAnswers: new LargeAnswers(),
      start: () => triggers.start(),
      stop: async () => {
        await triggers.stop();
        await auth.close();
        await closeAdapters();
      },
    };
  } catch (err) {
    await closeAdapters();
    throw err;
  }
}
