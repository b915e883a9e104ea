/**
 * Entry point of the typed SDK for one API version of the NMDC metadata service.
 *
 * `createNmdcClient({ baseUrl, token })` gives every operation of the API as a method bound to
 * one client (base URL and bearer token), plus `paginate(...)`, an async iterator over every
 * record of a paged endpoint.
 *
 * Copied by `npm run generate` from scripts/sdk-template/index.ts.tmpl; `paging.ts` and the `api/`
 * folder beside it are generated from the OpenAPI document. Do not edit any of them by hand.
 */
import * as sdk from './api/sdk.gen.ts';
import { createClient, createConfig, type Client } from './api/client/index.ts';
import type { ClientOptions } from './api/types.gen.ts';
import { PAGE_TOKEN_OPERATIONS } from './paging.ts';

export * from './api/index.ts';
export { sdk };

/** The generated operation functions of this API version. */
type Operations = {
  [K in keyof typeof sdk as (typeof sdk)[K] extends (options: any) => Promise<unknown> ? K : never]: (typeof sdk)[K];
};

/** Options of an operation without `client`: the bound method supplies it. */
type OptionsOf<F> = F extends (options: infer O) => any ? Omit<NonNullable<O>, 'client'> : never;

/** What a bound operation resolves to: `{ data, error, request, response }`, errors not thrown. */
type ResultOf<R> = R extends Promise<infer U> ? Promise<Extract<U, { error: unknown }>> : R;

/** An operation bound to one client; its options stay optional exactly when the API says so. */
export type BoundOperation<F> = F extends (options: infer O) => infer R
  ? undefined extends O
    ? (options?: OptionsOf<F>) => ResultOf<R>
    : (options: OptionsOf<F>) => ResultOf<R>
  : never;

/** The response body of an operation's success. */
type DataOf<F> = F extends (options: any) => Promise<infer Res>
  ? Res extends { data: infer D }
    ? Exclude<D, undefined>
    : never
  : never;

/** The record type of a paged response: `results` of a compact find, `resources` of a collection query. */
type ItemOf<D> = D extends { results: Array<infer T> } ? T : D extends { resources: Array<infer T> } ? T : never;

/** Names of the operations `paginate` can walk: those answering pages of records. */
export type PagedOperationName = {
  [K in keyof Operations]: [ItemOf<DataOf<Operations[K]>>] extends [never] ? never : K;
}[keyof Operations];

/** Record type yielded by `paginate` for an operation. */
export type PagedItem<K extends PagedOperationName> = ItemOf<DataOf<Operations[K]>>;

export interface NmdcClientOptions {
  /** Where the service answers, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Access token from `POST /token` (the `login` method), sent as `Authorization: Bearer ...`. */
  token?: string;
  /** A `fetch` implementation; the global one by default. */
  fetch?: typeof fetch;
}

/** Thrown by `paginate` when a page request fails; `detail` is the service's `{"detail": ...}`. */
export class NmdcRequestError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(`Request failed with status ${status}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
    this.name = 'NmdcRequestError';
  }
}

export type NmdcClient = { [K in keyof Operations]: BoundOperation<Operations[K]> } & {
  /** The underlying fetch client (interceptors, configuration). */
  readonly client: Client;
  /** Uses this access token from now on (e.g. after `login`). */
  setToken(token: string | undefined): void;
  /**
   * Every record of a paged endpoint, fetching pages as the caller iterates: compact finds follow
   * `cursor=*` and `meta.next_cursor`; listings (collection queries, sites) follow `page_token`
   * and `next_page_token`.
   */
  paginate<K extends PagedOperationName>(operation: K, options?: OptionsOf<Operations[K]>): AsyncGenerator<PagedItem<K>>;
  /**
   * Every record of a collection, or those matching `filter` (a MongoDB-style JSON filter, as text
   * or an object), in `id` order: `GET /export/{collection_name}` streamed as NDJSON and parsed a
   * line at a time, so memory stays small however many records there are. For CSV or TSV call
   * `exportCollection` with `query: { format: 'csv' }` and `parseAs: 'stream'` (or `'text'`).
   */
  exportRecords(
    collection: string,
    options?: { filter?: string | Record<string, unknown>; projection?: string; signal?: AbortSignal },
  ): AsyncGenerator<ExportedRecord>;
};

/** A record as the export streams it. */
export type ExportedRecord = { id?: string; type?: string } & Record<string, unknown>;

type AnyOperation = (options: any) => Promise<{ data?: any; error?: unknown; response?: Response }>;

export function createNmdcClient(options: NmdcClientOptions): NmdcClient {
  const client = createClient(
    createConfig<ClientOptions>({
      baseUrl: options.baseUrl.replace(/\/+$/, '') as ClientOptions['baseUrl'],
      auth: options.token,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    }),
  );
  const operations = sdk as unknown as Record<string, AnyOperation>;
  const bound: Record<string, unknown> = {};
  for (const [name, operation] of Object.entries(operations)) {
    if (typeof operation !== 'function') continue;
    bound[name] = (opts?: Record<string, unknown>) => operation({ ...opts, client });
  }

  async function* paginate(name: string, opts: Record<string, any> = {}): AsyncGenerator<unknown> {
    const operation = operations[name];
    if (typeof operation !== 'function') throw new TypeError(`Unknown operation ${name}`);
    const byToken = PAGE_TOKEN_OPERATIONS.has(name);
    const query: Record<string, unknown> = { ...(opts.query ?? {}) };
    if (byToken) delete query.page_token;
    else {
      // Cursor paging sees every record exactly once, however deep; page numbers would stop at 10,000.
      delete query.page;
      query.cursor = '*';
    }
    for (;;) {
      const result = await operation({ ...opts, query, client });
      if (result.error !== undefined || !result.data) {
        throw new NmdcRequestError(
          result.response?.status ?? 0,
          (result.error as { detail?: unknown } | undefined)?.detail ?? result.error,
        );
      }
      const page = result.data;
      if (byToken) {
        yield* page.resources;
        if (!page.next_page_token) return;
        query.page_token = page.next_page_token;
      } else {
        yield* page.results;
        if (!page.meta.next_cursor) return;
        query.cursor = page.meta.next_cursor;
      }
    }
  }

  async function* exportRecords(
    collection: string,
    opts: { filter?: string | Record<string, unknown>; projection?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<ExportedRecord> {
    const filter = typeof opts.filter === 'object' ? JSON.stringify(opts.filter) : opts.filter;
    const result = await operations.exportCollection!({
      client,
      path: { collection_name: collection },
      query: {
        format: 'ndjson',
        ...(filter !== undefined ? { filter } : {}),
        ...(opts.projection !== undefined ? { projection: opts.projection } : {}),
      },
      parseAs: 'stream',
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const body = result.data as ReadableStream<Uint8Array> | undefined;
    if (result.error !== undefined || !body) {
      throw new NmdcRequestError(
        result.response?.status ?? 0,
        (result.error as { detail?: unknown } | undefined)?.detail ?? result.error,
      );
    }
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      let start = 0;
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n', start)) {
        const line = pending.slice(start, end);
        start = end + 1;
        if (line !== '') yield JSON.parse(line) as ExportedRecord;
      }
      pending = pending.slice(start);
    }
    pending += decoder.decode();
    if (pending.trim() !== '') yield JSON.parse(pending) as ExportedRecord;
  }

  return Object.assign(bound, {
    client,
    setToken: (token: string | undefined) => client.setConfig({ auth: token }),
    paginate,
    exportRecords,
  }) as unknown as NmdcClient;
}
