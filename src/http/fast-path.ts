/**
 * A shorter way through the app for the hot read-only GETs (a record by id, a listing, the
 * version): the request is read, validated and answered by the same pieces as on the full chain
 * (the same query reading, the same request validator, the same metrics, security headers and
 * request log, the same route handler and the same error handler), without walking the chain's
 * other middleware and every capability router on the way. Only a request the fast path fully
 * understands takes it: a GET (or a HEAD, which the GET route answers) without a body, without an
 * `Origin` header, whose path matches one of its routes literally (no case or trailing-slash
 * variants, parameters that decode) and whose query the operation's validator accepts. Anything
 * else, a refused query included, is answered by the full chain, which gives the canonical answer.
 */
import { IncomingMessage, ServerResponse, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { logIgnoredParameters, type ReadUrl } from './request-reading/index.ts';
import { REQUEST_STARTED } from './metrics.ts';
import { resolveRef, type OpenApiDocument } from './openapi-documents.ts';

/** What Express keeps of a route: its path and the handlers it dispatches to. */
interface ExpressRoute {
  path: string;
  methods: Record<string, boolean>;
  dispatch(req: Request, res: Response, done: (err?: unknown) => void): void;
}

/** A route the fast path answers, as the capability's router holds it. */
export interface FastRoute {
  /** The router the route is defined on (found there by its Express path). */
  router: Router;
  /** The Express path, e.g. `/nmdcschema/ids/:doc_id`. */
  path: string;
  /**
   * Which parameter values this route answers on the full chain (another route defined before it
   * may take the others, e.g. `/nmdcschema/version` before `/nmdcschema/:collection_name`).
   */
  accepts?: (params: Record<string, string>) => boolean;
  /** Parameter values the route accepts, for its warm-up (default: a made-up id). */
  samples?: Record<string, string>;
}

export interface FastPathParts {
  app: Express;
  routes: FastRoute[];
  /** The chain's own middleware, in the chain's order, run for every fast-path request. */
  before: RequestHandler[];
  /** The query as the chain's query reading leaves it. */
  readUrl: (method: string, path: string, url: string) => ReadUrl;
  /** The request validator's middleware, as mounted on the chain. */
  validator: RequestHandler[];
  /** The contract the validator checks requests against (which of a route's requests it can refuse). */
  document: OpenApiDocument;
  /**
   * Whether the validator's verdicts may be kept (`queryDecides`): not when it also checks answers,
   * which it sets up on each request as the request passes it.
   */
  keepVerdicts: boolean;
  errorHandler: ErrorRequestHandler;
}

interface CompiledRoute {
  route: ExpressRoute;
  /** Each segment: a literal, or a parameter's name. */
  segments: Array<{ literal: string } | { param: string }>;
  accepts?: (params: Record<string, string>) => boolean;
  samples?: Record<string, string>;
  /** The route's path as the contract writes it (`/nmdcschema/ids/{doc_id}`). */
  template: string;
  /**
   * The validator's verdicts on this route's requests by method and query, when nothing else of a
   * fast-path request can change them (`queryDecides`); undefined otherwise.
   */
  verdicts?: Map<string, Verdict>;
}

/** What the validator leaves on a request it accepts, but the path's parameters. */
interface Verdict {
  openapi: Record<string, unknown>;
  /** The validated query, when the validator leaves one (a documented operation). */
  query?: { value: unknown };
}

/** Verdicts kept per route, at most (a route's distinct queries beyond these start it over). */
const VERDICTS_KEPT = 512;
/** Queries longer than this are checked each time (at most 512 KiB of keys per route). */
const KEPT_QUERY_CHARS = 1024;

/** How many requests the fast path answered, and how many of them on a kept verdict, per app. */
const served = new WeakMap<Express, { count: number; kept: number }>();

/** The number of requests `app`'s fast path has answered (0 when it has none). */
export function fastPathServed(app: Express): number {
  return served.get(app)?.count ?? 0;
}

/** How many of them the validator's kept verdict let in without checking them again. */
export function fastPathKeptVerdicts(app: Express): number {
  return served.get(app)?.kept ?? 0;
}

/** Paths longer than this, or with characters beyond these, take the full chain. */
const MAX_PATH = 1024;
const PLAIN_PATH = /^[\w.~:@!$&'()*+,;=%/-]*$/;

/** Schema keywords that do not constrain a value. */
const ANNOTATIONS = new Set(['type', 'description', 'example', 'examples', 'title']);

/**
 * True when the validator's verdict on a GET of `template` depends on nothing but the method and
 * the query, for a request the fast path takes (no body, no Origin): the operation takes no body,
 * and each parameter outside the query is a path parameter of any string (a non-empty segment, as
 * the fast path matches it). A record's id, for one, is any string: its requests differ only in
 * their paths, and the validator's checks of them (35-45 us of 340 us of CPU a request) need not
 * run again for each.
 */
export function queryDecides(document: OpenApiDocument, template: string): boolean {
  const item = document.paths[template];
  const operation = item?.get as { parameters?: unknown[]; requestBody?: unknown } | undefined;
  if (!item || !operation || operation.requestBody !== undefined) return false;
  const parameters = [...((item.parameters as unknown[] | undefined) ?? []), ...(operation.parameters ?? [])];
  return parameters.every((p) => {
    const parameter = resolveRef(document, p) as { in?: unknown; schema?: unknown } | undefined;
    if (parameter?.in === 'query') return true;
    if (parameter?.in !== 'path') return false;
    const schema = resolveRef(document, parameter.schema) as Record<string, unknown> | undefined;
    return (
      schema !== undefined && schema.type === 'string' && Object.keys(schema).every((k) => ANNOTATIONS.has(k))
    );
  });
}

/** A copy of a validated query (plain values, arrays and objects), with the prototypes it had. */
function copyOfQuery(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyOfQuery);
  if (value === null || typeof value !== 'object') return value;
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
  for (const key of Object.keys(value))
    Object.defineProperty(copy, key, {
      value: copyOfQuery((value as Record<string, unknown>)[key]),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  return copy;
}

function compile(route: FastRoute, document: OpenApiDocument, keepVerdicts: boolean): CompiledRoute {
  const layer = (route.router.stack as Array<{ route?: ExpressRoute }>).find(
    (l) => l.route?.path === route.path && l.route.methods.get,
  );
  if (!layer?.route) throw new Error(`fast path: no GET route ${route.path} on its router`);
  const segments = route.path
    .split('/')
    .slice(1)
    .map((s) => (s.startsWith(':') ? { param: s.slice(1) } : { literal: s }));
  const template = route.path.replace(/:(\w+)/g, '{$1}');
  return {
    route: layer.route,
    segments,
    accepts: route.accepts,
    samples: route.samples,
    template,
    verdicts: keepVerdicts && queryDecides(document, template) ? new Map() : undefined,
  };
}

/** The route and decoded parameters of `path`, or undefined when the fast path does not take it. */
function match(
  routes: CompiledRoute[],
  path: string,
): { route: ExpressRoute; compiled: CompiledRoute; params: Record<string, string> } | undefined {
  if (path.length > MAX_PATH || !PLAIN_PATH.test(path)) return undefined;
  const parts = path.split('/');
  if (parts[0] !== '') return undefined;
  for (const candidate of routes) {
    if (candidate.segments.length !== parts.length - 1) continue;
    const params: Record<string, string> = {};
    let matched = true;
    for (let i = 0; i < candidate.segments.length && matched; i++) {
      const segment = candidate.segments[i]!;
      const part = parts[i + 1]!;
      if ('literal' in segment) matched = segment.literal === part;
      else if (part === '') matched = false;
      else {
        try {
          params[segment.param] = decodeURIComponent(part);
        } catch {
          return undefined;
        }
      }
    }
    if (!matched) continue;
    // A route defined before this one would answer: leave it to the chain.
    if (candidate.accepts && !candidate.accepts(params)) return undefined;
    return { route: candidate.route, compiled: candidate, params };
  }
  return undefined;
}

/**
 * Runs `handlers` in turn; `done` gets the first error, or nothing when all called `next()`. A
 * handler that throws before calling `next` passes its error on, as in an Express chain; what is
 * thrown after it did (by whatever ran after it) is not taken for its error.
 */
function runAll(
  handlers: RequestHandler[],
  req: Request,
  res: Response,
  done: (err?: unknown) => void,
): void {
  let i = 0;
  const next = (err?: unknown): void => {
    if (err !== undefined && err !== null) return done(err);
    const handler = handlers[i++];
    if (!handler) return done();
    let advanced = false;
    try {
      void handler(req, res, (e?: unknown) => {
        advanced = true;
        next(e);
      });
    } catch (thrown) {
      if (advanced) throw thrown;
      done(thrown);
    }
  };
  next();
}

const noop = () => {};

/** A path of `route` with sample parameter values (the route's own samples, else a made-up id). */
function sampleUrl(route: CompiledRoute): string {
  return `/${route.segments
    .map((s) =>
      'literal' in s ? s.literal : encodeURIComponent(route.samples?.[s.param] ?? 'nmdc:warm-up-0'),
    )
    .join('/')}`;
}

/** The warm-up of each app's fast path (`warmFastPath`). */
const warmers = new WeakMap<Express, () => Promise<{ warmed: number; refused: string[] }>>();

/**
 * Has the request validator build its checks of each fast-path route now, a route per turn of the
 * event loop. It builds an operation's checks on the operation's first request (tens of ms), which
 * the first caller of each route after a start would otherwise wait for; the checks are shared with
 * the full chain. Resolves with how many routes were warmed and the sample paths the validator
 * refused (none, unless a route's samples are wrong). An app without a fast path warms nothing.
 */
export async function warmFastPath(app: Express): Promise<{ warmed: number; refused: string[] }> {
  return (await warmers.get(app)?.()) ?? { warmed: 0, refused: [] };
}

/** The prototypes each app's fast path gives requests and responses (`nodeClasses`). */
const prototypes = new WeakMap<Express, { request: object; response: object }>();

/**
 * Node's request and response constructors for a server of `app`: their objects are born with the
 * prototypes the app gives them (the fast path's request, else Express's; Express's response),
 * rather than having them changed on each request by the fast path or Express's `app.handle`. V8
 * gives an object whose prototype changed a map of its own, and each property then added to it
 * (the middleware and Express add several) costs microseconds; setting the prototype an object
 * already has costs nothing. Objects of a server made without these are answered the same.
 */
export function nodeClasses(app: Express): {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
} {
  const { request, response } = prototypes.get(app) ?? { request: app.request, response: app.response };
  const incoming = IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void;
  const outgoing = ServerResponse as unknown as (
    this: ServerResponse,
    req: IncomingMessage,
    options?: unknown,
  ) => void;
  function AppRequest(this: IncomingMessage, socket: Socket): void {
    incoming.call(this, socket);
  }
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: unknown): void {
    outgoing.call(this, req, options);
  }
  AppRequest.prototype = request;
  AppResponse.prototype = response;
  return {
    IncomingMessage: AppRequest as unknown as typeof IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof ServerResponse,
  };
}

/** Where a request answered by the fast path keeps its validated query. */
const QUERY = Symbol('query');

/**
 * Puts the fast path in front of `app`: requests it takes are answered there, all others by the
 * app as before.
 */
export function installFastPath(parts: FastPathParts): void {
  const { app, before, readUrl, validator, errorHandler, document, keepVerdicts } = parts;
  const routes = parts.routes.map((route) => compile(route, document, keepVerdicts));
  const counter = { count: 0, kept: 0 };
  served.set(app, counter);
  type Handle = (req: IncomingMessage, res: ServerResponse, next?: unknown) => void;
  const handled = app as unknown as { handle: Handle };
  const full = handled.handle.bind(app);

  // Express's request, whose `query` is the validated query the validator leaves (defining it on
  // each request, as the validator does, costs microseconds: V8 gives the request a new shape).
  const request = Object.create(app.request, {
    query: {
      configurable: true,
      enumerable: true,
      get(this: Record<symbol, unknown>) {
        return QUERY in this ? this[QUERY] : expressQuery.call(this);
      },
      // Writable, as the validator leaves it.
      set(this: Record<symbol, unknown>, value: unknown) {
        this[QUERY] = value;
      },
    },
  }) as Request;

  const expressQuery = Object.getOwnPropertyDescriptor(express.request, 'query')!.get!;
  prototypes.set(app, { request, response: app.response });
  /** A stand-in of a request, holding what the validator reads. */
  const probeOf = (
    method: string,
    headers: IncomingHttpHeaders,
    url: string,
    originalUrl: string,
    res: Response,
  ) => {
    const probe = Object.create(app.request) as Request & { openapi?: unknown };
    probe.method = method;
    probe.headers = headers;
    probe.url = url;
    probe.originalUrl = originalUrl;
    probe.baseUrl = '';
    probe.res = res;
    return probe;
  };
  warmers.set(app, async () => {
    const refused: string[] = [];
    for (const route of routes) {
      const url = sampleUrl(route);
      const res = Object.create(app.response) as Response;
      const err = await new Promise<unknown>((resolve) =>
        runAll(validator, probeOf('GET', {}, url, url, res), res, resolve),
      );
      if (err !== undefined) refused.push(url);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { warmed: routes.length - refused.length, refused };
  });
  const fast = (raw: IncomingMessage, rawRes: ServerResponse, next?: unknown): void => {
    const headers = raw.headers;
    const method = raw.method;
    if (
      (method !== 'GET' && method !== 'HEAD') ||
      next !== undefined ||
      headers.origin !== undefined ||
      headers['content-length'] !== undefined ||
      headers['transfer-encoding'] !== undefined
    )
      return full(raw, rawRes, next);
    const originalUrl = raw.url ?? '';
    const mark = originalUrl.indexOf('?');
    const path = mark < 0 ? originalUrl : originalUrl.slice(0, mark);
    const found = match(routes, path);
    if (!found) return full(raw, rawRes);
    // The request's time is counted from here, validation included, whichever way answers it.
    (raw as unknown as Record<symbol, bigint>)[REQUEST_STARTED] = process.hrtime.bigint();

    // As Express sets up every request (app.handle).
    const req = raw as Request;
    const res = rawRes as Response;
    req.res = res;
    res.req = req;
    Object.setPrototypeOf(res, app.response);
    if (!res.locals) res.locals = Object.create(null);
    const { url, ignored } = readUrl(method, path, originalUrl);

    // The validator checks a stand-in of the request holding what it reads; what it leaves there
    // is moved onto the request only when the request is taken, so that a refused request reaches
    // the full chain untouched, for its canonical answer. (A stand-in made with Object.create(req)
    // would turn each request into a prototype, which V8 makes costly.)
    const accepted = (openapi: unknown, query: { value: unknown } | undefined): void => {
      // As app.handle, router.handle and the validator leave them.
      Object.setPrototypeOf(req, request);
      req.url = url;
      req.originalUrl = originalUrl;
      req.baseUrl = '';
      (req as { openapi?: unknown }).openapi = openapi;
      // The validator leaves a query only for a documented operation (not for HEAD, which the
      // GET route answers): otherwise Express's own reading of it stands.
      if (query) (req as unknown as Record<symbol, unknown>)[QUERY] = query.value;
      counter.count++;
      // Errors end in the chain's error handler, as on the full chain.
      const failed = (err: unknown) => errorHandler(err, req, res, noop);
      runAll(before, req, res, (err) => {
        if (err !== undefined) return failed(err);
        try {
          logIgnoredParameters(req, ignored);
          req.params = found.params;
          found.route.dispatch(req, res, (routeErr) =>
            failed(routeErr ?? new Error(`${path}: the route did not answer`)),
          );
        } catch (thrown) {
          failed(thrown);
        }
      });
    };

    const { verdicts } = found.compiled;
    const key =
      verdicts && url.length - path.length <= KEPT_QUERY_CHARS
        ? `${method} ${url.slice(path.length)}`
        : undefined;
    const kept = key === undefined ? undefined : verdicts!.get(key);
    if (kept) {
      counter.kept++;
      return accepted(
        { ...kept.openapi, pathParams: { ...found.params } },
        kept.query && { value: copyOfQuery(kept.query.value) },
      );
    }

    // The validator checks a stand-in of the request holding what it reads; what it leaves there
    // is moved onto the request only when the request is taken, so that a refused request reaches
    // the full chain untouched, for its canonical answer. (A stand-in made with Object.create(req)
    // would turn each request into a prototype, which V8 makes costly.)
    const probe = probeOf(method, headers, url, originalUrl, res);
    runAll(validator, probe, res, (refused) => {
      if (refused !== undefined) return full(raw, rawRes);
      const query = Object.hasOwn(probe, 'query') ? { value: probe.query as unknown } : undefined;
      const openapi = probe.openapi as { openApiRoute?: string; pathParams?: unknown } | undefined;
      // Kept only for the operation the route was judged by (the validator may take another).
      if (key !== undefined && openapi?.openApiRoute === found.compiled.template) {
        if (verdicts!.size >= VERDICTS_KEPT) verdicts!.clear();
        const { pathParams: _, ...rest } = openapi;
        verdicts!.set(key, { openapi: rest, query: query && { value: copyOfQuery(query.value) } });
      }
      accepted(openapi, query);
    });
  };
  handled.handle = fast;
}
