/**
 * Fuzzing of the whole HTTP surface from the OpenAPI documents: every operation of API 2.13.0 and
 * 1.2.0, anonymous and with each kind of token, with values generated from each parameter's and
 * body's schema, mutations of the documented examples, malformed bodies of every media type, and
 * the hostile corpus (test/fuzz/hostile-corpus.ts) aimed at every field that meets a pattern.
 *
 * What every answer must be: not a 5xx, a 4xx with a `detail` (Node's own 431 aside), within the
 * deadline, and from a server still up (no refused or reset connection). Used by
 * test/fuzz/openapi-surface.test.ts (a bounded run in `npm test`) and `npm run bench:fuzz`.
 */
import http from 'node:http';
import fc from 'fast-check';
import { loadApiDocuments, type OpenApiDocument } from '../../src/http/openapi-documents.ts';
import { HOSTILE_PATTERNS, hostileValues, patternSlots } from './hostile-corpus.ts';
import { commandBody, jsonFilterText, oddText } from './inputs.ts';

export interface Operation {
  version: string;
  method: string;
  path: string;
  spec: Record<string, any>;
}

/** Every operation of both API versions (an operation both share is listed once per version). */
export function operationsOf(documents = loadApiDocuments()): {
  operations: Operation[];
  resolve: (node: any) => any;
} {
  const docs: OpenApiDocument[] = [documents.current, documents.legacy];
  const resolve = (node: any): any => {
    let n = node;
    for (let i = 0; i < 20 && n && typeof n.$ref === 'string'; i++) {
      let target: any = documents.current;
      for (const part of n.$ref.slice(2).split('/')) target = target?.[part];
      n = target;
    }
    return n;
  };
  const operations: Operation[] = [];
  for (const doc of docs)
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
      for (const method of ['get', 'post', 'put', 'patch', 'delete'])
        if (item[method])
          operations.push({
            version: doc.info.version,
            method: method.toUpperCase(),
            path,
            spec: {
              ...item[method],
              parameters: [...(item.parameters ?? []), ...(item[method].parameters ?? [])],
            },
          });
  return { operations, resolve };
}

/** A request as sent: method, path with its query, headers and body. */
export interface FuzzRequest {
  method: string;
  target: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface Answer {
  status: number;
  ms: number;
  /** Why the answer breaks the property; undefined when it holds. */
  problem?: string;
}

const hostileText = fc.oneof(
  { weight: 3, arbitrary: oddText },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_PATTERNS) },
  { weight: 1, arbitrary: fc.constantFrom(...hostileValues(1200)) },
);

/** Values for a JSON schema: mostly of its type (enums, formats), sometimes of another or hostile. */
function valueOf(schema: any, resolve: (n: any) => any, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema) ?? {};
  const branches = s.anyOf ?? s.oneOf;
  if (branches?.length && depth < 6)
    return fc.oneof(...branches.map((b: any) => valueOf(b, resolve, depth + 1)));
  if (s.allOf?.length && depth < 6)
    return fc
      .tuple(...s.allOf.map((b: any) => valueOf(b, resolve, depth + 1)))
      .map((parts) => Object.assign({}, ...parts.filter((p) => p && typeof p === 'object')));
  const wrong = fc.oneof(
    fc.constant(null),
    fc.integer(),
    fc.boolean(),
    hostileText,
    fc.constant([]),
    fc.constant({}),
  );
  let typed: fc.Arbitrary<unknown>;
  if (Array.isArray(s.enum)) typed = fc.constantFrom(...s.enum);
  else if (s.type === 'string' && s.format === 'date-time')
    typed = fc.oneof(
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      hostileText,
    );
  else if (s.type === 'string') typed = fc.oneof(fc.string({ maxLength: 20 }), hostileText);
  else if (s.type === 'integer' || s.type === 'number')
    typed = fc.oneof(fc.integer({ min: -5, max: 5000 }), fc.constantFrom(0, -1, 2 ** 53, 1e308, 0.5));
  else if (s.type === 'boolean') typed = fc.boolean();
  else if (s.type === 'array' && depth < 6)
    typed = fc.array(valueOf(s.items ?? {}, resolve, depth + 1), { maxLength: 3 });
  else if ((s.type === 'object' || s.properties) && depth < 6) {
    const props = Object.entries<any>(s.properties ?? {});
    typed = fc.record(Object.fromEntries(props.map(([k, v]) => [k, valueOf(v, resolve, depth + 1)])), {
      requiredKeys: [],
    });
  } else typed = fc.oneof(fc.jsonValue({ maxDepth: 2 }), hostileText);
  return fc.oneof({ weight: 4, arbitrary: typed }, { weight: 1, arbitrary: wrong });
}

/** The documented examples of a JSON body, each leaf possibly swapped for a hostile value. */
function mutatedExample(examples: unknown[]): fc.Arbitrary<unknown> {
  const mutate = (value: unknown, depth: number): fc.Arbitrary<unknown> => {
    if (Array.isArray(value) && depth < 8)
      return fc.tuple(...value.map((v) => mutate(v, depth + 1))).map((a) => a as unknown);
    if (value && typeof value === 'object' && depth < 8 && Object.keys(value).length > 0) {
      const entries = Object.entries(value);
      return fc
        .tuple(
          fc.tuple(...entries.map(([, v]) => mutate(v, depth + 1))),
          fc.option(fc.constantFrom(...entries.map(([k]) => k))),
        )
        .map(([values, dropped]) =>
          Object.fromEntries(entries.map(([k], i) => [k, values[i]] as const).filter(([k]) => k !== dropped)),
        );
    }
    return fc.oneof({ weight: 3, arbitrary: fc.constant(value) }, { weight: 1, arbitrary: hostileText });
  };
  return fc.constantFrom(...examples).chain((e) => mutate(e, 0));
}

function examplesOf(media: any): unknown[] {
  const out: unknown[] = [];
  if (media?.example !== undefined) out.push(media.example);
  for (const e of Object.values<any>(media?.examples ?? {})) if (e?.value !== undefined) out.push(e.value);
  return out;
}

/** Text that is not what the media type says: broken JSON, deep nesting, odd bytes. */
const malformedText = fc.oneof(
  fc.constantFrom('{', '[]', 'null', '"x"', '{"a":', '\u0000', '{"__proto__":{"polluted":1}}', ''),
  fc.integer({ min: 90, max: 3000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 90, max: 3000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  fc.string({ unit: 'binary', maxLength: 60 }),
  jsonFilterText,
);

/** A multipart body: a changesheet (hostile values possible), truncated or with a wrong boundary. */
function multipartBody(sheetRows: fc.Arbitrary<string>): fc.Arbitrary<{ type: string; body: string }> {
  const boundary = 'fuzz-boundary';
  return fc
    .tuple(sheetRows, fc.constantFrom('whole', 'truncated', 'no-close', 'other-boundary', 'field-not-file'))
    .map(([rows, shape]) => {
      const text = `id\taction\tattribute\tvalue\n${rows}`;
      const disposition =
        shape === 'field-not-file'
          ? 'form-data; name="uploaded_file"'
          : 'form-data; name="uploaded_file"; filename="sheet.tsv"';
      const part = `--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: text/tab-separated-values\r\n\r\n${text}`;
      const body =
        shape === 'truncated'
          ? part.slice(0, Math.max(10, Math.floor(part.length / 2)))
          : shape === 'no-close'
            ? part
            : `${part}\r\n--${shape === 'other-boundary' ? 'elsewhere' : boundary}--\r\n`;
      return { type: `multipart/form-data; boundary=${boundary}`, body };
    });
}

export interface Context {
  /** Authorization header values: anonymous (undefined), users, site clients, forged ones. */
  auths: Array<string | undefined>;
  /** Ids that exist, for path parameters and changesheets. */
  ids: string[];
}

/** Changesheet rows aimed at slots with patterns, numbers and odd actions. */
function changesheetRows(ids: string[]): fc.Arbitrary<string> {
  const slots = patternSlots()
    .filter((s) => s.collection === 'biosample_set')
    .map((s) => s.slot);
  const row = fc
    .tuple(
      fc.oneof(fc.constantFrom(...ids), oddText),
      fc.constantFrom('update', 'insert', 'remove', 'remove item', 'replace', 'frobnicate', ''),
      fc.oneof(fc.constantFrom(...slots, 'ph', 'depth.has_numeric_value', 'name'), oddText),
      fc.oneof(hostileText, fc.double().map(String)),
    )
    .map((cells) => cells.map((c) => c.replace(/[\t\n]/g, ' ')).join('\t'));
  return fc.array(row, { minLength: 1, maxLength: 4 }).map((rows) => rows.join('\n'));
}

/** Generated requests for one operation. */
export function requestsFor(
  op: Operation,
  resolve: (n: any) => any,
  ctx: Context,
): fc.Arbitrary<FuzzRequest> {
  const params = (op.spec.parameters as any[]).map(resolve).filter(Boolean);
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const idLike = fc.oneof(fc.constantFrom(...ctx.ids), oddText, fc.constantFrom(...hostileValues(400)));
  const pathArb = fc
    .tuple(...pathParams.map((p) => fc.oneof(idLike, valueOf(p.schema, resolve).map(String))))
    .map((values) => {
      let path = op.path;
      pathParams.forEach((p, i) => {
        const v = String(values[i]).replace(/[\ud800-\udfff]/g, '\ufffd');
        path = path.replace(`{${p.name}}`, encodeURIComponent(v) || '%20');
      });
      return path;
    });
  const queryValue = (p: any): fc.Arbitrary<string> => {
    const special =
      p.name === 'filter'
        ? op.path.startsWith('/nmdcschema')
          ? jsonFilterText
          : fc.oneof(
              fc.constantFrom(...HOSTILE_PATTERNS).map((pat) => `name.search:${pat}`),
              fc.constantFrom(...hostileValues(2000)).map((v) => `depth:>${v}`),
              hostileText,
            )
        : undefined;
    return fc.oneof(
      special ?? valueOf(p.schema, resolve).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
      oddText,
    );
  };
  const queryArb = fc
    .tuple(
      ...queryParams.map((p) => fc.option(queryValue(p), { nil: undefined })),
      fc.option(fc.tuple(oddText, oddText)),
    )
    .map((values) => {
      const q = new URLSearchParams();
      queryParams.forEach((p, i) => {
        if (values[i] !== undefined)
          q.append(p.name, String(values[i]).replace(/[\ud800-\udfff]/g, '\ufffd'));
      });
      const extra = values[queryParams.length] as [string, string] | null;
      if (extra) q.append(extra[0].replace(/[\ud800-\udfff]/g, ''), extra[1].replace(/[\ud800-\udfff]/g, ''));
      const text = q.toString();
      return text ? `?${text}` : '';
    });
  const content = op.spec.requestBody ? (resolve(op.spec.requestBody)?.content ?? {}) : {};
  const bodyArb: fc.Arbitrary<{ type?: string; body?: string }> = (() => {
    if (content['multipart/form-data']) return multipartBody(changesheetRows(ctx.ids));
    if (content['application/x-www-form-urlencoded']) {
      const schema = content['application/x-www-form-urlencoded'].schema;
      return fc.oneof(
        valueOf(schema, resolve).map((v) => ({
          type: 'application/x-www-form-urlencoded',
          body: new URLSearchParams(
            v && typeof v === 'object'
              ? Object.fromEntries(
                  Object.entries(v).map(([k, x]) => [k, String(x).replace(/[\ud800-\udfff]/g, '')]),
                )
              : {},
          ).toString(),
        })),
        malformedText.map((body) => ({ type: 'application/x-www-form-urlencoded', body })),
      );
    }
    if (content['application/json']) {
      const media = content['application/json'];
      const examples = examplesOf(media);
      const json = fc.oneof(
        { weight: 3, arbitrary: valueOf(media.schema, resolve).map((v) => JSON.stringify(v) ?? 'null') },
        ...(examples.length
          ? [{ weight: 3, arbitrary: mutatedExample(examples).map((v) => JSON.stringify(v) ?? 'null') }]
          : []),
        { weight: 1, arbitrary: malformedText },
        ...(op.path === '/queries:run' ? [{ weight: 4, arbitrary: commandBody(['c-000000']) }] : []),
        ...(op.path.startsWith('/metadata/json:') ? [{ weight: 3, arbitrary: hostileDatabase() }] : []),
      );
      return fc
        .tuple(json, fc.constantFrom('application/json', 'application/json; charset=utf-16le', 'text/plain'))
        .map(([body, type]) => ({ type, body }));
    }
    return fc.oneof(
      fc.constant({}),
      malformedText.map((body) => ({ type: 'application/json', body })),
    );
  })();
  // A logout would end the tokens the rest of the run uses: it gets only forged ones, or none.
  const auths = op.path === '/logout' ? ctx.auths.filter((a) => !a || a.includes('forged')) : ctx.auths;
  return fc.tuple(pathArb, queryArb, bodyArb, fc.constantFrom(...auths)).map(([path, query, body, auth]) => ({
    method: op.method,
    target: path + query,
    headers: {
      ...(body.type ? { 'content-type': body.type } : {}),
      ...(auth ? { authorization: auth } : {}),
    },
    body: body.body,
  }));
}

/** A Database payload whose records carry hostile values in slots that have a pattern. */
function hostileDatabase(): fc.Arbitrary<string> {
  const slots = patternSlots();
  return fc.tuple(fc.constantFrom(...slots), fc.constantFrom(...hostileValues(2400))).map(([s, value]) =>
    JSON.stringify({
      [s.collection]: [{ id: `nmdc:x-11-${s.slot}`, type: s.type, [s.slot]: s.list ? [value] : value }],
    }),
  );
}

/**
 * The deterministic part: for every collection, one request per hostile value with every
 * pattern slot of its class set to it; `$regex` with each hostile pattern in every place a filter
 * takes one; and every compact find with hostile `.search` and numerals.
 */
export function corpusRequests(
  ctx: Context,
  admin: string,
  { valueLength = 2400, values = hostileValues(valueLength).length } = {},
): FuzzRequest[] {
  const aimed = hostileValues(valueLength).slice(0, values);
  const json = (target: string, body: unknown, auth?: string): FuzzRequest => ({
    method: 'POST',
    target,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(body),
  });
  const out: FuzzRequest[] = [];
  const byCollection = new Map<string, { type: string; slots: Array<{ slot: string; list: boolean }> }>();
  for (const s of patternSlots()) {
    const entry = byCollection.get(s.collection) ?? { type: s.type, slots: [] };
    entry.slots.push(s);
    byCollection.set(s.collection, entry);
  }
  for (const value of aimed)
    for (const [collection, { type, slots }] of byCollection) {
      const record: Record<string, unknown> = { id: `nmdc:x-11-${collection}`, type };
      for (const { slot, list } of slots) record[slot] = list ? [value] : value;
      out.push(json('/metadata/json:validate', { [collection]: [record] }));
    }
  const get = (target: string): FuzzRequest => ({ method: 'GET', target, headers: {} });
  for (const pattern of HOSTILE_PATTERNS) {
    const regex = { $regex: pattern };
    out.push(get(`/nmdcschema/biosample_set?filter=${encodeURIComponent(JSON.stringify({ name: regex }))}`));
    out.push(get(`/biosamples?filter=${encodeURIComponent(`name.search:${pattern}`)}`));
    out.push(json('/queries:run', { find: 'biosample_set', filter: { name: regex } }, admin));
    out.push(json('/queries:run', { count: 'biosample_set', query: { name: regex } }, admin));
    out.push(
      json(
        '/queries:run',
        {
          aggregate: 'biosample_set',
          pipeline: [
            { $limit: 5 },
            { $addFields: { bait: hostileValues(40)[0] } },
            { $match: { bait: regex } },
            { $project: { m: { $regexFindAll: { input: '$bait', regex: pattern } } } },
          ],
        },
        admin,
      ),
    );
    out.push(
      json(
        '/queries:run',
        {
          update: 'biosample_set',
          updates: [{ q: { id: ctx.ids[0] }, u: { $pull: { alternative_identifiers: regex } } }],
        },
        admin,
      ),
    );
  }
  for (const value of aimed)
    for (const find of ['/studies', '/biosamples', '/data_objects', '/planned_processes'])
      out.push(get(`${find}?filter=${encodeURIComponent(`depth:>${value.slice(0, 8000)}`)}`));
  return out;
}

/** Sends one request (no connection reuse, so a dead process shows as a refused connection). */
export function send(base: string, req: FuzzRequest, deadlineMs: number): Promise<Answer> {
  const url = new URL(base);
  const started = performance.now();
  return new Promise((resolve) => {
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.target,
        // A length for every body, GET's included: without one the body would read as the next request.
        headers:
          req.body === undefined
            ? req.headers
            : { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
        agent: false,
        timeout: deadlineMs * 4,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const ms = performance.now() - started;
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ms,
            problem: problemOf(
              req,
              status,
              res.headers['content-type'],
              Buffer.concat(chunks),
              ms,
              deadlineMs,
            ),
          });
        });
        res.on('error', (err) =>
          resolve({ status: 0, ms: performance.now() - started, problem: `response ${err.message}` }),
        );
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer within ${deadlineMs * 4} ms`)));
    r.on('error', (err: NodeJS.ErrnoException) => {
      const ms = performance.now() - started;
      // Node's parser refuses a request target longer than its header limit and resets the rest.
      if (err.code === 'ECONNRESET' && req.target.length > http.maxHeaderSize) resolve({ status: 431, ms });
      else resolve({ status: 0, ms, problem: `no answer: ${err.code ?? err.message}` });
    });
    r.end(req.body);
  });
}

function problemOf(
  req: FuzzRequest,
  status: number,
  type: string | undefined,
  body: Buffer,
  ms: number,
  deadlineMs: number,
): string | undefined {
  if (status >= 500) return `${status} ${body.toString('utf8', 0, 300)}`;
  if (ms > deadlineMs) return `answered after ${Math.round(ms)} ms (deadline ${deadlineMs} ms)`;
  if (status >= 400 && status !== 431) {
    if (!type?.includes('json')) return `${status} without a JSON detail (${type ?? 'no content type'})`;
    try {
      const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown> | null;
      // GA4GH DRS answers its own errors in its shape: `msg` and `status_code`.
      const drs = req.target.startsWith('/ga4gh/') && parsed !== null && 'msg' in parsed;
      if (parsed === null || typeof parsed !== 'object' || !('detail' in parsed || drs))
        return `${status} without a detail`;
    } catch {
      return `${status} with a body that is not JSON`;
    }
  }
  return undefined;
}

export interface Tally {
  sent: number;
  byStatus: Map<number, number>;
  slowest: { ms: number; what: string };
  failures: string[];
}

export function newTally(): Tally {
  return { sent: 0, byStatus: new Map(), slowest: { ms: 0, what: '' }, failures: [] };
}

export function describeRequest(req: FuzzRequest): string {
  const body =
    req.body === undefined
      ? ''
      : ` ${String(req.body).slice(0, 160)}${String(req.body).length > 160 ? `... (${String(req.body).length} chars)` : ''}`;
  return `${req.method} ${req.target.slice(0, 200)}${req.target.length > 200 ? '...' : ''}${req.headers.authorization ? ' [token]' : ''}${body}`;
}

/** Sends the requests `width` at a time, tallying the answers. */
export async function sendAll(
  base: string,
  requests: Iterable<FuzzRequest>,
  tally: Tally,
  {
    deadlineMs,
    width = 2,
    stopAt = Number.POSITIVE_INFINITY,
  }: { deadlineMs: number; width?: number; stopAt?: number },
): Promise<void> {
  const queue = [...requests];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let req = queue.shift(); req && performance.now() < stopAt; req = queue.shift()) {
        const answer = await send(base, req, deadlineMs);
        tally.sent++;
        tally.byStatus.set(answer.status, (tally.byStatus.get(answer.status) ?? 0) + 1);
        if (answer.ms > tally.slowest.ms) tally.slowest = { ms: answer.ms, what: describeRequest(req) };
        if (answer.problem) tally.failures.push(`${describeRequest(req)} -> ${answer.problem}`);
      }
    }),
  );
}

/** `perOperation` generated requests per operation (each with one of the authorizations), deterministic for a seed. */
export function generatedRequests(
  ops: Operation[],
  resolve: (n: any) => any,
  ctx: Context,
  perOperation: number,
  seed: number,
): FuzzRequest[] {
  return ops.flatMap((op, i) =>
    fc.sample(requestsFor(op, resolve, ctx), { numRuns: perOperation, seed: seed + i }),
  );
}
