/**
 * An Elasticsearch 8 stand-in: an HTTP server on 127.0.0.1 that the official client talks to as to
 * a one-node cluster, as strict as the real server where the search adapter could go wrong:
 *
 * - `regexp` queries are parsed with Lucene 9's grammar (./lucene-regexp.ts) and refused (400) as
 *   Lucene refuses them, and longer than the index's `index.max_regex_length` (1,000) refused too;
 * - requests larger than `http.max_content_length` (100 MB unless configured) get a 413;
 * - `_bulk` answers per item: external versions (an older version is a 409), `require_alias`,
 *   terms longer than Lucene's 32,766 bytes refused, and failures a test injects (transient 429s,
 *   permanent refusals);
 * - a write to an index that does not exist auto-creates it (unless `action.auto_create_index`
 *   forbids it) with the best matching index template, or else dynamic mappings, under which a
 *   `regexp` on a string field matches tokens, not values (so path-bound regexps match nothing);
 * - searches see writes only after a refresh; a point in time keeps what was visible when it was
 *   opened and is gone when its index is; `get` is real time;
 * - aliases change atomically (`_aliases`), one write index per alias, no alias named like an index,
 *   no deleting an index through an alias; composable templates with overlapping patterns must
 *   have different priorities;
 * - with `apiKey`, every request needs `Authorization: ApiKey <key>`; with `tls`, HTTPS.
 *
 * It implements the requests the adapter sends, not all of Elasticsearch: a request it does not
 * know is a 400 naming it, so a new kind of request cannot pass unseen.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { compileLuceneRegexp, LuceneRegexpError } from './lucene-regexp.ts';

type Json = any;

export interface StandInOptions {
  /** `http.max_content_length` in bytes (default 100 MB). */
  maxContentLength?: number;
  /** Require `Authorization: ApiKey <apiKey>` (the encoded key). */
  apiKey?: string;
  /** Serve HTTPS with this key and certificate chain (PEM). */
  tls?: { key: string; cert: string };
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  bytes: number;
  body: Json;
}

/** A failure a test injects into `_bulk` items (or whole requests). */
export interface InjectedFailure {
  status: number;
  type: string;
  reason: string;
}

class EsError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    reason: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(reason);
  }
}

const MAX_TERM_BYTES = 32_766;
const DEFAULT_MAX_CONTENT_LENGTH = 100 * 1024 * 1024;

interface FieldMapping {
  type: string;
  analyzer?: string;
  ignore_above?: number;
  fields?: Record<string, FieldMapping>;
}

interface StoredDoc {
  source: Json;
  version: number;
  seqNo: number;
  /** Internal document number: the `_doc` / `_shard_doc` order. */
  docNo: number;
}

interface Index {
  name: string;
  settings: Record<string, unknown>;
  dynamic: boolean | 'strict';
  properties: Record<string, FieldMapping>;
  analysis: Json;
  docs: Map<string, StoredDoc>;
  /** Versions of deleted documents (`index.gc_deletes` is not modelled: they are kept). */
  tombstones: Map<string, number>;
  /** What searches see: the documents as of the last refresh. */
  visible: Map<string, StoredDoc>;
  seqNo: number;
  docNo: number;
  primaryTerm: number;
}

interface Template {
  patterns: string[];
  priority: number;
  settings: Json;
  mappings: Json;
}

interface Pit {
  snapshots: Array<{ index: Index; docs: Map<string, StoredDoc> }>;
  expires: number;
}

const INVALID_NAME = /[\\/*?"<>| ,#:A-Z]/;

function checkName(name: string, what: 'index' | 'alias'): void {
  if (name === '' || name === '.' || name === '..' || /^[-_+]/.test(name) || INVALID_NAME.test(name))
    throw new EsError(400, `invalid_${what}_name_exception`, `Invalid ${what} name [${name}]`);
}

const glob = (pattern: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);

function settingOf(settings: Record<string, unknown>, key: string): unknown {
  return settings[key] ?? settings[`index.${key}`];
}

/** Flattens `{index: {a: 1}, b: {c: 2}}` into `{a: 1, 'b.c': 2}` (without the `index.` prefix). */
function flattenSettings(settings: Json, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings ?? {})) {
    const key = prefix + (prefix === '' && k === 'index' ? '' : k);
    if (k === 'analysis') out[`${prefix}analysis`] = v;
    else if (v !== null && typeof v === 'object' && !Array.isArray(v))
      Object.assign(out, flattenSettings(v, key === '' ? '' : `${key}.`));
    else out[key.replace(/^index\./, '')] = v;
  }
  return out;
}

export class ElasticsearchStandIn {
  readonly requests: RecordedRequest[] = [];
  private readonly indices = new Map<string, Index>();
  private readonly aliases = new Map<string, Map<string, { isWriteIndex: boolean }>>();
  private readonly templates = new Map<string, Template>();
  private readonly pits = new Map<string, Pit>();
  private autoCreate: string = 'true';
  private readonly itemFailures: Array<{
    match: (action: string, index: string, id: string) => boolean;
    failure: InjectedFailure;
    times: number;
  }> = [];
  private readonly requestFailures: Array<{
    match: (method: string, path: string) => boolean;
    failure: InjectedFailure;
    times: number;
  }> = [];
  /** Called before each search runs (tests interleave other work there). */
  beforeSearch: (() => Promise<void>) | undefined;
  private server!: http.Server;
  url = '';

  private constructor(private readonly options: StandInOptions) {}

  static async start(options: StandInOptions = {}): Promise<ElasticsearchStandIn> {
    const standIn = new ElasticsearchStandIn(options);
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void standIn.handle(req, res);
    standIn.server = options.tls
      ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, handler)
      : http.createServer(handler);
    await new Promise<void>((resolve) => standIn.server.listen(0, '127.0.0.1', resolve));
    const { port } = standIn.server.address() as AddressInfo;
    standIn.url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    return standIn;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ----- what tests inspect and inject -----

  /** Makes the next `times` bulk items that `match` fail with `failure`. */
  failItems(
    match: (action: string, index: string, id: string) => boolean,
    failure: InjectedFailure,
    times = Infinity,
  ): void {
    this.itemFailures.push({ match, failure, times });
  }

  /** Makes the next `times` requests that `match` fail with `failure`. */
  failRequests(match: (method: string, path: string) => boolean, failure: InjectedFailure, times = 1): void {
    this.requestFailures.push({ match, failure, times });
  }

  /** Concrete index names, sorted. */
  indexNames(): string[] {
    return [...this.indices.keys()].sort();
  }

  /** The concrete indices an alias points to. */
  aliasTargets(alias: string): string[] {
    return [...(this.aliases.get(alias)?.keys() ?? [])].sort();
  }

  mappingOf(index: string): { dynamic: boolean | 'strict'; properties: Record<string, FieldMapping> } {
    const i = this.indices.get(index)!;
    return { dynamic: i.dynamic, properties: i.properties };
  }

  /** The source of a document as stored (real time), or undefined. */
  document(index: string, id: string): { source: Json; version: number } | undefined {
    const doc = this.concrete(index)?.docs.get(id);
    return doc && { source: doc.source, version: doc.version };
  }

  setAutoCreateIndex(value: string): void {
    this.autoCreate = value;
  }

  // ----- HTTP -----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let tooLarge = false;
    const limit = this.options.maxContentLength ?? DEFAULT_MAX_CONTENT_LENGTH;
    for await (const chunk of req) {
      bytes += (chunk as Buffer).length;
      if (bytes > limit) tooLarge = true;
      else chunks.push(chunk as Buffer);
    }
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? 'GET';
    const path = decodeURIComponent(url.pathname);
    const send = (status: number, body: Json, headers: Record<string, string> = {}) => {
      const text = body === undefined ? '' : JSON.stringify(body);
      res.writeHead(status, {
        'x-elastic-product': 'Elasticsearch',
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(text)),
        ...headers,
      });
      res.end(method === 'HEAD' ? undefined : text);
    };
    if (tooLarge) {
      // As Elasticsearch's HTTP layer answers: a bare 413, before the request is read.
      this.requests.push({ method, path, query, bytes, body: undefined });
      res.writeHead(413, { 'content-length': '0' });
      res.end();
      return;
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Json;
    try {
      if (this.options.apiKey && req.headers.authorization !== `ApiKey ${this.options.apiKey}`)
        throw new EsError(401, 'security_exception', 'missing authentication credentials for REST request', {
          'WWW-Authenticate': 'ApiKey',
        });
      body = raw === '' ? undefined : path.endsWith('/_bulk') ? raw : JSON.parse(raw);
      this.requests.push({ method, path, query, bytes, body });
      const injected = this.requestFailures.find((f) => f.times > 0 && f.match(method, path));
      if (injected) {
        injected.times--;
        throw new EsError(injected.failure.status, injected.failure.type, injected.failure.reason);
      }
      const [status, out] = await this.route(method, path, query, body);
      send(status, out);
    } catch (err) {
      if (err instanceof EsError) {
        const error = {
          root_cause: [{ type: err.type, reason: err.message }],
          type: err.type,
          reason: err.message,
        };
        send(err.status, { error, status: err.status }, err.headers);
      } else if (err instanceof SyntaxError) {
        send(400, { error: { type: 'parse_exception', reason: err.message }, status: 400 });
      } else {
        send(500, { error: { type: 'stand_in_failure', reason: String(err) }, status: 500 });
      }
    }
  }

  private async route(
    method: string,
    path: string,
    query: Record<string, string>,
    body: Json,
  ): Promise<[number, Json]> {
    const parts = path.split('/').filter((p) => p !== '');
    const [first, second, third] = parts;
    if (parts.length === 0) {
      return [
        200,
        {
          name: 'stand-in',
          cluster_name: 'stand-in',
          version: { number: '8.15.0' },
          tagline: 'You Know, for Search',
        },
      ];
    }
    if (first === '_bulk' && method === 'POST') return this.bulk(undefined, query, body);
    if (first === '_aliases' && method === 'POST') return this.updateAliases(body);
    if (first === '_alias') return this.getAliases(undefined, second, method);
    if (first === '_index_template' && second && method === 'PUT') return this.putTemplate(second, body);
    if (first === '_index_template' && second && method === 'DELETE') {
      if (!this.templates.delete(second))
        throw new EsError(
          404,
          'resource_not_found_exception',
          `index template matching [${second}] not found`,
        );
      return [200, { acknowledged: true }];
    }
    if (first === '_cluster' && second === 'settings' && method === 'PUT') {
      const value =
        body?.persistent?.['action.auto_create_index'] ?? body?.transient?.['action.auto_create_index'];
      if (value !== undefined) this.autoCreate = String(value);
      return [200, { acknowledged: true }];
    }
    if (first === '_pit' && method === 'DELETE') {
      const found = this.pits.delete(body?.id);
      return [found ? 200 : 404, { succeeded: found, num_freed: found ? 1 : 0 }];
    }
    if (first === '_refresh') return this.refresh('*', query);
    if (first === '_search') return this.search(undefined, query, body);
    if (first && !first.startsWith('_')) {
      if (parts.length === 1) {
        if (method === 'HEAD') return [this.resolve(first, true).length > 0 ? 200 : 404, undefined];
        if (method === 'PUT') return this.createIndex(first, body);
        if (method === 'GET') {
          const out: Record<string, Json> = {};
          for (const index of this.resolve(first, first.includes('*')))
            out[index.name] = {
              aliases: {},
              mappings: { dynamic: index.dynamic, properties: index.properties },
              settings: index.settings,
            };
          return [200, out];
        }
        if (method === 'DELETE') return this.deleteIndex(first, query);
      }
      if (second === '_refresh') return this.refresh(first, query);
      if (second === '_bulk' && method === 'POST') return this.bulk(first, query, body);
      if (second === '_search') return this.search(first, query, body);
      if (second === '_pit' && method === 'POST') return this.openPit(first, query);
      if (second === '_alias') return this.getAliases(first, third, method);
      if (second === '_doc' && third !== undefined) {
        if (method === 'GET') return this.getDoc(first, third);
        if (method === 'PUT' || method === 'POST') return this.indexDoc(first, third, query, body);
      }
    }
    throw new EsError(400, 'stand_in_unsupported', `the stand-in does not implement ${method} ${path}`);
  }

  // ----- indices, aliases, templates -----

  private concrete(name: string): Index | undefined {
    const direct = this.indices.get(name);
    if (direct) return direct;
    const targets = this.aliases.get(name);
    if (targets && targets.size === 1) return this.indices.get([...targets.keys()][0]!);
    return undefined;
  }

  /** Concrete indices named by an expression: names, aliases and wildcards, comma-separated. */
  private resolve(expression: string, lenient = false): Index[] {
    const out = new Map<string, Index>();
    for (const part of expression.split(',')) {
      if (part.includes('*')) {
        const re = glob(part);
        for (const [name, index] of this.indices) if (re.test(name)) out.set(name, index);
        for (const [alias, targets] of this.aliases)
          if (re.test(alias)) for (const t of targets.keys()) out.set(t, this.indices.get(t)!);
        continue;
      }
      const index = this.indices.get(part);
      if (index) out.set(part, index);
      else if (this.aliases.has(part))
        for (const t of this.aliases.get(part)!.keys()) out.set(t, this.indices.get(t)!);
      else if (!lenient) throw new EsError(404, 'index_not_found_exception', `no such index [${part}]`);
    }
    return [...out.values()];
  }

  private matchingTemplate(name: string): Template | undefined {
    let best: Template | undefined;
    for (const t of this.templates.values())
      if (t.patterns.some((p) => glob(p).test(name)) && (!best || t.priority > best.priority)) best = t;
    return best;
  }

  private makeIndex(name: string, settings: Json, mappings: Json): Index {
    checkName(name, 'index');
    if (this.aliases.has(name))
      throw new EsError(
        400,
        'invalid_index_name_exception',
        `Invalid index name [${name}], already exists as alias`,
      );
    const template = this.matchingTemplate(name);
    const flat = { ...flattenSettings(template?.settings), ...flattenSettings(settings) };
    const mergedMappings = {
      ...(template?.mappings ?? {}),
      ...(mappings ?? {}),
      properties: { ...(template?.mappings?.properties ?? {}), ...(mappings?.properties ?? {}) },
    };
    const dynamic = mergedMappings.dynamic === undefined ? true : mergedMappings.dynamic;
    const analysis: Json = flat.analysis ?? {};
    const index: Index = {
      name,
      settings: flat,
      dynamic: dynamic === 'strict' ? 'strict' : dynamic === true || dynamic === 'true',
      properties: mergedMappings.properties,
      analysis,
      docs: new Map(),
      tombstones: new Map(),
      visible: new Map(),
      seqNo: -1,
      docNo: 0,
      primaryTerm: 1,
    };
    for (const [field, mapping] of Object.entries(index.properties)) {
      if (mapping.analyzer && mapping.analyzer !== 'standard' && !analysis.analyzer?.[mapping.analyzer])
        throw new EsError(
          400,
          'mapper_parsing_exception',
          `Failed to parse mapping: analyzer [${mapping.analyzer}] has not been configured in mappings (field ${field})`,
        );
    }
    return index;
  }

  private createIndex(name: string, body: Json): [number, Json] {
    if (this.indices.has(name))
      throw new EsError(400, 'resource_already_exists_exception', `index [${name}] already exists`);
    const index = this.makeIndex(name, body?.settings, body?.mappings);
    const aliasActions = Object.entries(body?.aliases ?? {}).map(([alias, opts]) => ({
      add: { index: name, alias, is_write_index: (opts as Json)?.is_write_index },
    }));
    this.indices.set(name, index);
    try {
      this.applyAliasActions(aliasActions);
    } catch (err) {
      this.indices.delete(name);
      throw err;
    }
    return [200, { acknowledged: true, shards_acknowledged: true, index: name }];
  }

  private deleteIndex(expression: string, query: Record<string, string>): [number, Json] {
    for (const part of expression.split(',')) {
      if (part.includes('*'))
        throw new EsError(
          400,
          'illegal_argument_exception',
          'Wildcard expressions or all indices are not allowed',
        );
      if (this.aliases.has(part))
        throw new EsError(
          400,
          'illegal_argument_exception',
          `The provided expression [${part}] matches an alias, specify the corresponding concrete indices instead.`,
        );
      if (!this.indices.has(part)) {
        if (query.ignore_unavailable === 'true') continue;
        throw new EsError(404, 'index_not_found_exception', `no such index [${part}]`);
      }
      this.dropIndex(part);
    }
    return [200, { acknowledged: true }];
  }

  private dropIndex(name: string): void {
    this.indices.delete(name);
    for (const [alias, targets] of this.aliases) {
      targets.delete(name);
      if (targets.size === 0) this.aliases.delete(alias);
    }
    // A point in time on a deleted index loses its search context.
    for (const pit of this.pits.values()) pit.snapshots = pit.snapshots.filter((s) => s.index.name !== name);
  }

  private applyAliasActions(actions: Json[]): void {
    // All or nothing: work on copies, then commit.
    const aliases = new Map([...this.aliases].map(([a, t]) => [a, new Map(t)]));
    const removedIndices: string[] = [];
    for (const action of actions) {
      const [kind, spec] = Object.entries(action)[0] as [string, Json];
      const indices: string[] = spec.indices ?? (spec.index !== undefined ? [spec.index] : []);
      const names: string[] = spec.aliases ?? (spec.alias !== undefined ? [spec.alias] : []);
      if (kind === 'remove_index') {
        for (const i of indices) {
          if (!this.indices.has(i))
            throw new EsError(404, 'index_not_found_exception', `no such index [${i}]`);
          removedIndices.push(i);
          for (const [, targets] of aliases) targets.delete(i);
        }
        continue;
      }
      for (const alias of names) {
        checkName(alias, 'alias');
        for (const i of indices) {
          const targetNames = i.includes('*') ? this.resolve(i).map((x) => x.name) : [i];
          for (const target of targetNames) {
            if (!this.indices.has(target) || removedIndices.includes(target))
              throw new EsError(404, 'index_not_found_exception', `no such index [${target}]`);
            if (kind === 'add') {
              if (this.indices.has(alias) && !removedIndices.includes(alias))
                throw new EsError(
                  400,
                  'invalid_alias_name_exception',
                  `Invalid alias name [${alias}]: an index or data stream exists with the same name as the alias`,
                );
              const targets = aliases.get(alias) ?? new Map();
              targets.set(target, { isWriteIndex: spec.is_write_index === true });
              aliases.set(alias, targets);
            } else if (kind === 'remove') {
              const targets = aliases.get(alias);
              if (!targets?.has(target)) {
                if (spec.must_exist === false) continue;
                throw new EsError(404, 'aliases_not_found_exception', `aliases [${alias}] missing`);
              }
              targets.delete(target);
            } else throw new EsError(400, 'illegal_argument_exception', `unknown alias action [${kind}]`);
          }
        }
      }
    }
    for (const [alias, targets] of aliases) {
      if (targets.size === 0) aliases.delete(alias);
      const writers = [...targets].filter(([, o]) => o.isWriteIndex).map(([i]) => i);
      if (writers.length > 1)
        throw new EsError(
          400,
          'illegal_state_exception',
          `alias [${alias}] has more than one write index [${writers.join(',')}]`,
        );
    }
    this.aliases.clear();
    for (const [a, t] of aliases) this.aliases.set(a, t);
    for (const i of removedIndices) this.dropIndex(i);
  }

  private updateAliases(body: Json): [number, Json] {
    this.applyAliasActions(body?.actions ?? []);
    return [200, { acknowledged: true }];
  }

  private getAliases(
    indexExpr: string | undefined,
    nameExpr: string | undefined,
    method: string,
  ): [number, Json] {
    const indices = indexExpr ? new Set(this.resolve(indexExpr).map((i) => i.name)) : undefined;
    const names = nameExpr?.split(',').map(glob);
    const out: Record<string, { aliases: Record<string, Json> }> = {};
    let found = 0;
    for (const [alias, targets] of this.aliases) {
      if (names && !names.some((re) => re.test(alias))) continue;
      for (const [target, opts] of targets) {
        if (indices && !indices.has(target)) continue;
        (out[target] ??= { aliases: {} }).aliases[alias] = opts.isWriteIndex ? { is_write_index: true } : {};
        found++;
      }
    }
    if (nameExpr && found === 0) {
      if (method === 'HEAD') return [404, undefined];
      return [404, { error: `alias [${nameExpr}] missing`, status: 404 }];
    }
    if (!nameExpr && indices) for (const i of indices) out[i] ??= { aliases: {} };
    return [200, method === 'HEAD' ? undefined : out];
  }

  private putTemplate(name: string, body: Json): [number, Json] {
    const patterns: string[] = Array.isArray(body.index_patterns)
      ? body.index_patterns
      : [body.index_patterns];
    const priority = Number(body.priority ?? 0);
    for (const [other, t] of this.templates) {
      if (other === name || t.priority !== priority) continue;
      const overlaps = patterns.some((p) =>
        t.patterns.some((q) => glob(p).test(q.replace(/\*/g, 'x')) || glob(q).test(p.replace(/\*/g, 'x'))),
      );
      if (overlaps)
        throw new EsError(
          400,
          'illegal_argument_exception',
          `index template [${name}] has index patterns [${patterns.join(', ')}] matching patterns from existing templates [${other}] that have the same priority [${priority}]`,
        );
    }
    // The template is checked as an index would be created from it.
    this.makeIndex('template-check', body.template?.settings, body.template?.mappings);
    this.templates.set(name, {
      patterns,
      priority,
      settings: body.template?.settings ?? {},
      mappings: body.template?.mappings ?? {},
    });
    return [200, { acknowledged: true }];
  }

  private autoCreateAllowed(name: string): boolean {
    const value = this.autoCreate.trim();
    if (value === 'true') return true;
    if (value === 'false') return false;
    for (const raw of value.split(',')) {
      const rule = raw.trim();
      const allow = !rule.startsWith('-');
      if (glob(rule.replace(/^[+-]/, '')).test(name)) return allow;
    }
    return false;
  }

  /** The index a write to `name` goes to, auto-creating it as Elasticsearch would. */
  private writeTarget(name: string, requireAlias: boolean): Index {
    const targets = this.aliases.get(name);
    if (targets) {
      const writers = [...targets].filter(([, o]) => o.isWriteIndex).map(([i]) => i);
      const target = writers[0] ?? (targets.size === 1 ? [...targets.keys()][0] : undefined);
      if (!target)
        throw new EsError(
          400,
          'illegal_argument_exception',
          `no write index is defined for alias [${name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index`,
        );
      return this.indices.get(target)!;
    }
    if (requireAlias)
      throw new EsError(
        404,
        'index_not_found_exception',
        `no such index [${name}] and [require_alias] request flag is [true] and [${name}] is not an alias`,
      );
    const existing = this.indices.get(name);
    if (existing) return existing;
    if (!this.autoCreateAllowed(name))
      throw new EsError(
        404,
        'index_not_found_exception',
        `no such index [${name}] and [action.auto_create_index] ([${this.autoCreate}]) doesn't match`,
      );
    const created = this.makeIndex(name, undefined, undefined);
    this.indices.set(name, created);
    return created;
  }

  // ----- documents -----

  private tokens(index: Index, analyzerName: string | undefined, text: string): string[] {
    const analyzer =
      analyzerName && analyzerName !== 'standard' ? index.analysis.analyzer?.[analyzerName] : undefined;
    if (!analyzer)
      return text
        .toLowerCase()
        .split(/[^\p{L}\p{N}_']+/u)
        .filter((t) => t !== '');
    const tokenizer = index.analysis.tokenizer?.[analyzer.tokenizer];
    let tokens =
      tokenizer?.type === 'pattern'
        ? text.split(new RegExp(tokenizer.pattern, 'u')).filter((t) => t !== '')
        : text.split(/[^\p{L}\p{N}_']+/u).filter((t) => t !== '');
    for (const name of analyzer.filter ?? []) {
      const filter = name === 'lowercase' ? { type: 'lowercase' } : index.analysis.filter?.[name];
      if (filter?.type === 'lowercase') tokens = tokens.map((t) => t.toLowerCase());
      else if (filter?.type === 'truncate')
        tokens = tokens.map((t) => [...t].slice(0, filter.length ?? 10).join(''));
      else throw new EsError(400, 'illegal_argument_exception', `unknown token filter [${name}]`);
    }
    return tokens;
  }

  /** Maps new fields (dynamic mappings) and refuses what Lucene would refuse. */
  private parseDocument(index: Index, source: Json): void {
    if (source === null || typeof source !== 'object' || Array.isArray(source))
      throw new EsError(400, 'document_parsing_exception', 'failed to parse: the document is not an object');
    for (const [field, value] of Object.entries(source)) {
      let mapping = index.properties[field];
      if (!mapping) {
        if (index.dynamic === 'strict')
          throw new EsError(
            400,
            'strict_dynamic_mapping_exception',
            `[1:2] mapping set to strict, dynamic introduction of [${field}] within [_doc] is not allowed`,
          );
        if (!index.dynamic) continue;
        const sample = Array.isArray(value) ? value[0] : value;
        if (typeof sample === 'string')
          mapping = { type: 'text', fields: { keyword: { type: 'keyword', ignore_above: 256 } } };
        else if (typeof sample === 'number') mapping = { type: Number.isInteger(sample) ? 'long' : 'float' };
        else if (typeof sample === 'boolean') mapping = { type: 'boolean' };
        else mapping = { type: 'object' };
        index.properties[field] = mapping;
      }
      const values = Array.isArray(value) ? value : [value];
      const terms = (m: FieldMapping, v: unknown): string[] => {
        if (typeof v !== 'string') return [];
        if (m.type === 'keyword') return m.ignore_above !== undefined && v.length > m.ignore_above ? [] : [v];
        if (m.type === 'text') return this.tokens(index, m.analyzer, v);
        return [];
      };
      for (const v of values) {
        for (const [name, m] of [
          [field, mapping],
          ...Object.entries(mapping.fields ?? {}).map(([k, sub]) => [`${field}.${k}`, sub]),
        ] as Array<[string, FieldMapping]>) {
          for (const term of terms(m, v)) {
            const length = Buffer.byteLength(term);
            if (length > MAX_TERM_BYTES)
              throw new EsError(
                400,
                'illegal_argument_exception',
                `Document contains at least one immense term in field="${name}" (whose UTF8 encoding is longer than the max length ${MAX_TERM_BYTES}), all of which were skipped. Please correct the analyzer to not produce such terms. The prefix of the first immense term is: '${term.slice(0, 30)}...', original message: bytes can be at most ${MAX_TERM_BYTES} in length; got ${length}`,
              );
          }
        }
      }
    }
  }

  private checkVersion(
    index: Index,
    id: string,
    version: number | undefined,
    versionType: string | undefined,
  ): void {
    if (version === undefined) return;
    const current = index.docs.get(id)?.version ?? index.tombstones.get(id);
    if (current === undefined) return;
    const conflict = versionType === 'external_gte' ? current > version : current >= version;
    if (conflict)
      throw new EsError(
        409,
        'version_conflict_engine_exception',
        `[${id}]: version conflict, current version [${current}] is higher or equal to the one provided [${version}]`,
      );
  }

  private write(
    index: Index,
    id: string,
    source: Json,
    version: number | undefined,
    versionType: string | undefined,
  ): StoredDoc {
    this.checkVersion(index, id, version, versionType);
    this.parseDocument(index, source);
    const previous = index.docs.get(id);
    const doc: StoredDoc = {
      source: structuredClone(source),
      version: version ?? (previous?.version ?? index.tombstones.get(id) ?? 0) + 1,
      seqNo: ++index.seqNo,
      docNo: index.docNo++,
    };
    index.docs.set(id, doc);
    index.tombstones.delete(id);
    return doc;
  }

  private bulk(
    defaultIndex: string | undefined,
    query: Record<string, string>,
    body: string,
  ): [number, Json] {
    const lines = (body ?? '').split('\n').filter((l) => l.trim() !== '');
    const items: Json[] = [];
    const touched = new Set<Index>();
    for (let i = 0; i < lines.length; i++) {
      const action = JSON.parse(lines[i]!);
      const [kind, meta] = Object.entries(action)[0] as [string, Json];
      const source = kind === 'delete' ? undefined : JSON.parse(lines[++i] ?? 'null');
      const name: string = meta._index ?? defaultIndex;
      const id: string = meta._id;
      const requireAlias = meta.require_alias ?? query.require_alias === 'true';
      const item: Json = { _index: name, _id: id };
      try {
        if (!['index', 'create', 'delete'].includes(kind))
          throw new EsError(
            400,
            'illegal_argument_exception',
            `the stand-in does not implement bulk [${kind}]`,
          );
        const injected = this.itemFailures.find((f) => f.times > 0 && f.match(kind, name, id));
        if (injected) {
          injected.times--;
          // As Elasticsearch reports it: on the concrete index the alias resolved to.
          item._index = this.concrete(name)?.name ?? name;
          throw new EsError(injected.failure.status, injected.failure.type, injected.failure.reason);
        }
        const version = meta.version === undefined ? undefined : Number(meta.version);
        if (kind === 'delete') {
          const index = this.resolve(name, true).length === 0 ? undefined : this.writeTarget(name, false);
          if (!index) {
            Object.assign(item, {
              status: 404,
              error: { type: 'index_not_found_exception', reason: `no such index [${name}]` },
            });
            items.push({ [kind]: item });
            continue;
          }
          item._index = index.name;
          this.checkVersion(index, id, version, meta.version_type);
          const existed = index.docs.delete(id);
          const nextVersion = version ?? (index.tombstones.get(id) ?? 0) + 1;
          index.tombstones.set(id, nextVersion);
          touched.add(index);
          Object.assign(item, {
            _version: nextVersion,
            result: existed ? 'deleted' : 'not_found',
            status: existed ? 200 : 404,
          });
        } else {
          const index = this.writeTarget(name, requireAlias);
          item._index = index.name;
          if (kind === 'create' && index.docs.has(id))
            throw new EsError(
              409,
              'version_conflict_engine_exception',
              `[${id}]: version conflict, document already exists`,
            );
          const existed = index.docs.has(id);
          const doc = this.write(index, id, source, version, meta.version_type);
          touched.add(index);
          Object.assign(item, {
            _version: doc.version,
            _seq_no: doc.seqNo,
            result: existed ? 'updated' : 'created',
            status: existed ? 200 : 201,
          });
        }
      } catch (err) {
        if (!(err instanceof EsError)) throw err;
        Object.assign(item, { status: err.status, error: { type: err.type, reason: err.message } });
      }
      items.push({ [kind]: item });
    }
    if (query.refresh === 'true' || query.refresh === 'wait_for')
      for (const index of touched) this.refreshIndex(index);
    return [
      200,
      { took: 1, errors: items.some((it) => Object.values(it).some((r: Json) => r.error)), items },
    ];
  }

  private getDoc(name: string, id: string): [number, Json] {
    const index = this.concrete(name);
    if (!index) throw new EsError(404, 'index_not_found_exception', `no such index [${name}]`);
    const doc = index.docs.get(id);
    if (!doc) return [404, { _index: index.name, _id: id, found: false }];
    return [
      200,
      {
        _index: index.name,
        _id: id,
        _version: doc.version,
        _seq_no: doc.seqNo,
        _primary_term: index.primaryTerm,
        found: true,
        _source: doc.source,
      },
    ];
  }

  private indexDoc(name: string, id: string, query: Record<string, string>, body: Json): [number, Json] {
    const index = this.writeTarget(name, query.require_alias === 'true');
    const existing = index.docs.get(id);
    if (query.op_type === 'create' && existing)
      throw new EsError(
        409,
        'version_conflict_engine_exception',
        `[${id}]: version conflict, document already exists (current version [${existing.version}])`,
      );
    if (query.if_seq_no !== undefined) {
      if (
        !existing ||
        existing.seqNo !== Number(query.if_seq_no) ||
        index.primaryTerm !== Number(query.if_primary_term)
      )
        throw new EsError(
          409,
          'version_conflict_engine_exception',
          `[${id}]: version conflict, required seqNo [${query.if_seq_no}], primary term [${query.if_primary_term}]. ${existing ? `current document has seqNo [${existing.seqNo}] and primary term [${index.primaryTerm}]` : 'but no document was found'}`,
        );
    }
    const version = query.version === undefined ? undefined : Number(query.version);
    const doc = this.write(index, id, body, version, query.version_type);
    if (query.refresh === 'true' || query.refresh === 'wait_for') this.refreshIndex(index);
    return [
      existing ? 200 : 201,
      {
        _index: index.name,
        _id: id,
        _version: doc.version,
        _seq_no: doc.seqNo,
        _primary_term: index.primaryTerm,
        result: existing ? 'updated' : 'created',
      },
    ];
  }

  private refreshIndex(index: Index): void {
    index.visible = new Map(index.docs);
  }

  private refresh(expression: string, query: Record<string, string>): [number, Json] {
    const indices = this.resolve(expression, query.ignore_unavailable === 'true' || expression.includes('*'));
    for (const index of indices) this.refreshIndex(index);
    return [200, { _shards: { total: indices.length, successful: indices.length, failed: 0 } }];
  }

  // ----- search -----

  private openPit(expression: string, query: Record<string, string>): [number, Json] {
    const indices = this.resolve(expression, query.ignore_unavailable === 'true');
    const id = Buffer.from(randomUUID()).toString('base64');
    this.pits.set(id, {
      snapshots: indices.map((index) => ({ index, docs: index.visible })),
      expires: Date.now() + this.keepAliveMs(query.keep_alive),
    });
    return [200, { id }];
  }

  private keepAliveMs(text: string | undefined): number {
    const m = /^(\d+)(ms|s|m|h)$/.exec(text ?? '');
    if (!m) throw new EsError(400, 'illegal_argument_exception', `failed to parse keep_alive [${text}]`);
    return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms']!;
  }

  private async search(
    expression: string | undefined,
    query: Record<string, string>,
    body: Json,
  ): Promise<[number, Json]> {
    await this.beforeSearch?.();
    body = body ?? {};
    const param = (key: string) =>
      body[key] ?? (query[key] === undefined ? undefined : JSON.parse(query[key]!));
    let snapshots: Array<{ index: Index; docs: Map<string, StoredDoc> }>;
    const pitId = body.pit?.id;
    if (pitId !== undefined) {
      if (expression !== undefined)
        throw new EsError(
          400,
          'action_request_validation_exception',
          'Validation Failed: 1: [indices] cannot be used with point in time;',
        );
      const pit = this.pits.get(pitId);
      if (!pit || pit.expires < Date.now() || pit.snapshots.some((s) => !this.indices.has(s.index.name)))
        throw new EsError(
          404,
          'search_context_missing_exception',
          `No search context found for id [${pitId}]`,
        );
      if (body.pit.keep_alive) pit.expires = Date.now() + this.keepAliveMs(body.pit.keep_alive);
      snapshots = pit.snapshots;
    } else {
      const lenient = query.ignore_unavailable === 'true' || body.ignore_unavailable === true;
      snapshots = this.resolve(expression ?? '*', lenient).map((index) => ({ index, docs: index.visible }));
    }
    const size = Number(param('size') ?? 10);
    const from = Number(param('from') ?? 0);
    const window = Math.min(
      ...snapshots.map((s) => Number(settingOf(s.index.settings, 'max_result_window') ?? 10_000)),
      10_000,
    );
    if (from + size > window)
      throw new EsError(
        400,
        'illegal_argument_exception',
        `Result window is too large, from + size must be less than or equal to: [${window}] but was [${from + size}].`,
      );
    const sort = param('sort');
    const sortKey = JSON.stringify(sort ?? []);
    if (sortKey.includes('_shard_doc') && pitId === undefined)
      throw new EsError(
        400,
        'illegal_argument_exception',
        '[_shard_doc] sort field cannot be used without [point in time]',
      );
    const matchers = snapshots.map((s) => this.compileQuery(s.index, body.query ?? { match_all: {} }));
    const hits: Array<{ index: Index; id: string; doc: StoredDoc; order: number }> = [];
    snapshots.forEach((s, n) => {
      for (const [id, doc] of s.docs)
        if (matchers[n]!(doc)) hits.push({ index: s.index, id, doc, order: n * 1e9 + doc.docNo });
    });
    hits.sort((a, b) => a.order - b.order);
    const after = param('search_after') as number[] | undefined;
    const remaining = after ? hits.filter((h) => h.order > after[0]!) : hits;
    const track = param('track_total_hits');
    const limit =
      track === false ? undefined : track === true ? Infinity : typeof track === 'number' ? track : 10_000;
    const total =
      limit === undefined
        ? undefined
        : { value: Math.min(hits.length, limit), relation: hits.length > limit ? 'gte' : 'eq' };
    const docvalueFields: string[] = (param('docvalue_fields') ?? []).map((f: Json) =>
      typeof f === 'string' ? f : f.field,
    );
    const page = remaining.slice(from, from + size).map((h) => ({
      _index: h.index.name,
      _id: h.id,
      _score: sort ? null : 1,
      ...(param('_source') === false ? {} : { _source: h.doc.source }),
      ...(docvalueFields.length > 0
        ? {
            fields: Object.fromEntries(
              docvalueFields.map((f) => [f, [h.doc.source[f]].flat().filter((v) => v !== undefined)]),
            ),
          }
        : {}),
      ...(sort ? { sort: [h.order] } : {}),
    }));
    return [
      200,
      {
        took: 1,
        timed_out: false,
        ...(pitId !== undefined ? { pit_id: pitId } : {}),
        _shards: { total: snapshots.length, successful: snapshots.length, skipped: 0, failed: 0 },
        hits: { ...(total ? { total } : {}), max_score: null, hits: page },
      },
    ];
  }

  private compileQuery(index: Index, q: Json): (doc: StoredDoc) => boolean {
    const [kind, spec] = Object.entries(q)[0] as [string, Json];
    const fieldSpec = () => Object.entries(spec)[0] as [string, Json];
    const valuesOf = (doc: StoredDoc, field: string): string[] =>
      [doc.source[field]].flat().filter((v): v is string => typeof v === 'string');
    switch (kind) {
      case 'match_all':
        return () => true;
      case 'bool': {
        const clauses = [...[spec.filter ?? []].flat(), ...[spec.must ?? []].flat()].map((c) =>
          this.compileQuery(index, c),
        );
        return (doc) => clauses.every((c) => c(doc));
      }
      case 'prefix': {
        const [field, s] = fieldSpec();
        const value: string = typeof s === 'string' ? s : s.value;
        if (index.properties[field]?.type !== 'keyword') return () => false;
        return (doc) => valuesOf(doc, field).some((v) => v.startsWith(value));
      }
      case 'match': {
        const [field, s] = fieldSpec();
        const mapping = index.properties[field];
        if (!mapping) return () => false;
        const text: string = typeof s === 'string' ? s : s.query;
        const operator = (typeof s === 'string' ? 'or' : (s.operator ?? 'or')).toLowerCase();
        const wanted = mapping.type === 'text' ? this.tokens(index, mapping.analyzer, text) : [text];
        return (doc) => {
          const have = new Set(
            valuesOf(doc, field).flatMap((v) =>
              mapping.type === 'text' ? this.tokens(index, mapping.analyzer, v) : [v],
            ),
          );
          return operator === 'and' ? wanted.every((w) => have.has(w)) : wanted.some((w) => have.has(w));
        };
      }
      case 'regexp': {
        const [field, s] = fieldSpec();
        const value: string = typeof s === 'string' ? s : s.value;
        const flags: string = typeof s === 'string' ? 'ALL' : (s.flags ?? 'ALL');
        const max = Number(settingOf(index.settings, 'max_regex_length') ?? 1000);
        if (value.length > max)
          throw new EsError(
            400,
            'search_phase_execution_exception',
            `The length of regex [${value.length}] used in the Regexp Query request has exceeded the allowed maximum of [${max}]. This maximum can be set by changing the [index.max_regex_length] index level setting.`,
          );
        if (flags !== 'NONE')
          throw new EsError(
            400,
            'stand_in_unsupported',
            `the stand-in parses regexp flags NONE only, got [${flags}]`,
          );
        let compiled;
        try {
          compiled = compileLuceneRegexp(value, typeof s === 'object' && s.case_insensitive === true);
        } catch (err) {
          if (err instanceof LuceneRegexpError)
            throw new EsError(
              400,
              'search_phase_execution_exception',
              `failed to create query: ${err.message}`,
            );
          throw err;
        }
        const mapping = index.properties[field];
        if (!mapping) return () => false;
        // A text field holds tokens: the regexp must match one whole token.
        if (mapping.type === 'text')
          return (doc) =>
            valuesOf(doc, field).some((v) =>
              this.tokens(index, mapping.analyzer, v).some((t) => compiled.matches(t)),
            );
        return (doc) => valuesOf(doc, field).some((v) => compiled.matches(v));
      }
      default:
        throw new EsError(400, 'parsing_exception', `unknown query [${kind}]`);
    }
  }
}
