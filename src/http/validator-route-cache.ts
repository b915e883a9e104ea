/**
 * The request validator's route lookup, compiled once. express-openapi-validator 5 finds a
 * request's operation by compiling every path template of the contract with path-to-regexp, on
 * every request, one template after another until one matches (`lookupRoute` in
 * dist/middlewares/openapi.metadata.js): a tenth of a small request's CPU. This module replaces
 * that metadata middleware with one that does the same, with the same outcomes (the operation and
 * path parameters in `req.openapi`, 405 and 404 errors as the validator raises them), from
 * templates compiled at the first request and grouped by their first path segment, so a request
 * tries only the templates that can match it, in the contract's order.
 *
 * It also replaces how the validator reads a request's Content-Type (`validatorContentType`).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { parse as parseContentType } from 'content-type';
import type { NextFunction, Request, Response } from 'express';

const require = createRequire(import.meta.url);
const packageDir = path.dirname(require.resolve('express-openapi-validator/package.json'));
const fromPackage = (file: string) => require(path.join(packageDir, 'dist', file));

type Methods = Record<string, unknown> & { _expressRoute?: string; _openApiRoute?: string };
interface OpenApiContext {
  apiDoc: { paths: Record<string, Record<string, unknown>> };
  expressRouteMap: Record<string, Methods & { basePath: string }>;
  openApiRouteMap: Record<string, Methods>;
  serial: number;
  ignoreUndocumented: boolean;
  useRequestUrl: boolean;
  shouldIgnoreRoute(path: string): boolean;
  isManagedRoute(path: string): boolean;
  routePair(route: string): { expressRoute: string; openApiRoute: string };
}
type ResponseDoc = { paths: Record<string, Record<string, unknown>> } | undefined;

interface CompiledRoute {
  expressRoute: string;
  openApiRoute: string;
  pathKey: string;
  regexp: RegExp;
  keys: string[];
}

/**
 * The first path segment of a path-to-regexp template (`/queries\\:run/x` -> `queries:run`), or
 * undefined when it is not literal text (a parameter, a wildcard, a group).
 */
export function literalFirstSegment(template: string): string | undefined {
  const segment = template.split('/')[1] ?? '';
  const unescaped = segment.replace(/\\./g, '');
  return /[:*?{}()[\]\\]/.test(unescaped) ? undefined : segment.replace(/\\(.)/g, '$1');
}

/** The templates grouped by literal first segment, each group in the contract's order. */
class RouteTable {
  private readonly groups = new Map<string, CompiledRoute[]>();
  private readonly unmatchedGroup: CompiledRoute[] = [];

  constructor(
    routes: CompiledRoute[],
    private readonly sensitive: boolean,
  ) {
    const key = (s: string) => (sensitive ? s : s.toLowerCase());
    const literals = new Set<string>();
    for (const r of routes) {
      const first = literalFirstSegment(r.expressRoute);
      if (first !== undefined) literals.add(key(first));
    }
    for (const name of literals) this.groups.set(name, []);
    for (const r of routes) {
      const first = literalFirstSegment(r.expressRoute);
      if (first !== undefined) this.groups.get(key(first))!.push(r);
      else {
        // A template that may match any first segment is tried in every group, in its place.
        for (const group of this.groups.values()) group.push(r);
        this.unmatchedGroup.push(r);
      }
    }
  }

  candidates(requestPath: string): CompiledRoute[] {
    const end = requestPath.indexOf('/', 1);
    const first = requestPath.slice(1, end < 0 ? undefined : end);
    return this.groups.get(this.sensitive ? first : first.toLowerCase()) ?? this.unmatchedGroup;
  }
}

function metadataMiddleware(context: OpenApiContext, responseApiDoc: ResponseDoc) {
  const { MethodNotAllowed, NotFound, BadRequest } = fromPackage('framework/types.js');
  const { pathToRegexp } = require(require.resolve('path-to-regexp', { paths: [packageDir] })) as {
    pathToRegexp: (p: string, o: object) => { regexp: RegExp; keys: Array<{ name: string }> };
  };
  const { httpMethods } = fromPackage('middlewares/parsers/schema.preprocessor.js') as {
    httpMethods: Set<string>;
  };
  let table: RouteTable | undefined;

  const compile = (req: Request): RouteTable => {
    const strict = !!req.app.enabled('strict routing');
    const sensitive = !!req.app.enabled('case sensitive routing');
    const routes = Object.entries(context.expressRouteMap).map(([expressRoute, methods]) => {
      const { openApiRoute } = context.routePair(expressRoute);
      const { regexp, keys } = pathToRegexp(expressRoute, { sensitive, strict });
      return {
        expressRoute,
        openApiRoute,
        pathKey: openApiRoute.substring(methods.basePath.length),
        regexp,
        keys: keys.map((k) => k.name),
      };
    });
    return new RouteTable(routes, sensitive);
  };

  const lookupRoute = (req: Request) => {
    table ??= compile(req);
    const requestPath = (context.useRequestUrl ? req.url : req.originalUrl).split('?')[0]!;
    const method = req.method.toLowerCase();
    for (const route of table.candidates(requestPath)) {
      const matched = route.regexp.exec(requestPath);
      if (!matched) continue;
      let pathParams: Record<string, string>;
      try {
        pathParams = Object.fromEntries(
          route.keys.map((key, i) => [key, decodeURIComponent(matched[i + 1] as string)]),
        );
      } catch {
        throw new BadRequest({ path: req.path, message: `malformed uri'` });
      }
      return {
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        pathParams,
        schema: context.apiDoc.paths[route.pathKey]![method],
        _responseSchema: responseApiDoc?.paths[route.pathKey]![method],
      };
    }
    return null;
  };

  return (req: Request & { openapi?: unknown }, _res: Response, next: NextFunction) => {
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (context.shouldIgnoreRoute(path)) return next();
    const matched = lookupRoute(req);
    if (matched) {
      const { expressRoute, openApiRoute, pathParams, schema } = matched;
      if (!schema) {
        // Matches a path but not its method.
        if (context.ignoreUndocumented) return next();
        throw new MethodNotAllowed({
          path: req.path,
          message: `${req.method} method not allowed`,
          headers: {
            Allow: Object.keys(context.openApiRouteMap[openApiRoute]!)
              .filter((key) => httpMethods.has(key.toLowerCase()))
              .join(', '),
          },
        });
      }
      req.openapi = {
        expressRoute,
        openApiRoute,
        pathParams,
        schema,
        serial: context.serial,
        ...(responseApiDoc ? { _responseSchema: matched._responseSchema } : {}),
      };
      req.params = pathParams;
    } else if (context.isManagedRoute(path) && !context.ignoreUndocumented) {
      throw new NotFound({ path: req.path, message: 'not found' });
    }
    next();
  };
}

/** What the validator is told of a media type that no operation of the contract takes. */
export const UNDECLARED_MEDIA_TYPE = 'application/x-undeclared-media-type';

/**
 * The Content-Type the validator is given for a request's header: its media type (as the
 * `content-type` package reads it, in linear time) when an operation of the contract declares it,
 * else a stand-in, and no parameters (the body readers before the validator have read the
 * charset; multipart's boundary is read by busboy).
 *
 * The validator's own reading runs a backtracking pattern over the whole header (a header of
 * 16,000 semicolons held the event loop about 250 ms), and it keeps a compiled validator per
 * operation and distinct header, parameters included: every new value cost a compile (13 ms) and
 * memory that was never given back. There are at most as many of these answers as the contract
 * has media types, plus one.
 */
export function validatorContentType(
  header: string | undefined,
  declared: ReadonlySet<string>,
): string | undefined {
  const type = header === undefined ? undefined : mediaTypeOf(header);
  if (type === undefined) return undefined;
  return declared.has(type) ? type : UNDECLARED_MEDIA_TYPE;
}

/** The media types of the request bodies of `document`'s operations, lower case. */
export function declaredMediaTypes(document: {
  paths: Record<string, Record<string, unknown>>;
}): Set<string> {
  const types = new Set<string>();
  for (const item of Object.values(document.paths))
    for (const operation of Object.values(item)) {
      const content = (operation as { requestBody?: { content?: object } } | null)?.requestBody?.content;
      for (const type of Object.keys(content ?? {})) types.add(type.toLowerCase());
    }
  return types;
}

let installed = false;
/** The media types of the contracts of the validators installed in this process. */
const declared = new Set<string>();

/**
 * Makes every validator built afterwards in this process use the compiled lookup, and read a
 * request's Content-Type as `validatorContentType` does, for `document`'s media types.
 */
export function cacheValidatorRoutes(document: { paths: Record<string, Record<string, unknown>> }): void {
  for (const type of declaredMediaTypes(document)) declared.add(type);
  if (installed) return;
  installed = true;
  const { OpenApiValidator } = fromPackage('openapi.validator.js') as {
    OpenApiValidator: { prototype: { metadataMiddleware: typeof metadataMiddleware } };
  };
  OpenApiValidator.prototype.metadataMiddleware = metadataMiddleware;
  // Both the request and the response validator read the header through `from`; the response
  // validator reads each type the Accept header lists through `fromString`, with the same pattern.
  const { ContentType } = fromPackage('middlewares/util.js') as {
    ContentType: { from(req: Request): unknown; fromString(type?: string): unknown };
  };
  const fromString = ContentType.fromString.bind(ContentType);
  ContentType.from = (req: Request) =>
    fromString(validatorContentType(req.headers['content-type'], declared));
  ContentType.fromString = (type?: string) => fromString(type === undefined ? undefined : mediaTypeOf(type));
}

/** The media type of a Content-Type or of an Accept header's entry, without its parameters. */
function mediaTypeOf(type: string): string | undefined {
  return parseContentType(type).type || undefined;
}
