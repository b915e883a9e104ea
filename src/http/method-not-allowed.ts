/**
 * The end of the route list: a path the API describes asked with a method it does not take is a
 * 405 with `Allow` (as the original answers), an OPTIONS request on it a 204 with `Allow`, and
 * anything else a 404.
 */
import type { RequestHandler } from 'express';
import { MethodNotAllowed, NotFound } from '../errors.ts';
import type { OpenApiDocument } from './openapi-documents.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** One path segment of a template: literal text, or literal prefix + parameter + literal suffix. */
type SegmentMatcher = (segment: string) => boolean;

function segmentMatcher(template: string): SegmentMatcher {
  const open = template.indexOf('{');
  const close = template.indexOf('}', open);
  if (open < 0 || close < 0) return (segment) => segment === template;
  const prefix = template.slice(0, open);
  const suffix = template.slice(close + 1);
  // A second parameter in one segment never occurs in the API; such a segment matches anything non-empty.
  if (suffix.includes('{')) return (segment) => segment.length > 0;
  return (segment) =>
    segment.length > prefix.length + suffix.length && segment.startsWith(prefix) && segment.endsWith(suffix);
}

interface Template {
  segments: SegmentMatcher[];
  methods: string[];
  /** Characters outside parameters: of several templates matching a path, the most literal wins. */
  literal: number;
}

/** The methods the document gives each path template. */
export function pathTemplates(doc: OpenApiDocument): Template[] {
  return Object.entries<Record<string, unknown>>(doc.paths).map(([path, item]) => ({
    segments: path.split('/').slice(1).map(segmentMatcher),
    methods: METHODS.filter((m) => item[m] !== undefined).map((m) => m.toUpperCase()),
    literal: path.replace(/\{[^}]*\}/g, '').length,
  }));
}

/** The methods a request path takes (GET implies HEAD), or none when the API does not describe it. */
export function allowedMethods(templates: Template[], path: string): string[] {
  const segments = path.split('/').slice(1);
  const matching = templates.filter(
    (t) => t.segments.length === segments.length && t.segments.every((match, i) => match(segments[i]!)),
  );
  const best = Math.max(...matching.map((t) => t.literal));
  const allowed = new Set(matching.filter((t) => t.literal === best).flatMap((t) => t.methods));
  if (allowed.has('GET')) allowed.add('HEAD');
  return METHODS.map((m) => m.toUpperCase()).filter((m) => allowed.has(m));
}

export function methodNotAllowed(doc: OpenApiDocument): RequestHandler {
  const templates = pathTemplates(doc);
  return (req, res) => {
    const allowed = allowedMethods(templates, req.path);
    // Not described, or described for this method and still unanswered (an unknown record, say).
    if (allowed.length === 0 || allowed.includes(req.method)) throw new NotFound();
    const allow = [...allowed, 'OPTIONS'].join(', ');
    if (req.method === 'OPTIONS') {
      res.set('Allow', allow).status(204).end();
      return;
    }
    throw new MethodNotAllowed(
      `Method ${req.method} is not allowed on ${req.path}; it takes ${allow}`,
      allow,
    );
  };
}
