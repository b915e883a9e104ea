/**
 * The contract's `pattern`s on the linear-time engine. The request and response validator
 * (express-openapi-validator) compiles `pattern` with V8's backtracking engine and takes no other
 * engine; each pattern of the document it is given becomes a format of the same name checked by
 * re2js, so a request's values meet no backtracking pattern.
 */
import type { Format } from 'ajv';
import { linearPattern } from '../validation/linear-patterns.ts';
import type { OpenApiDocument } from './openapi-documents.ts';

export interface LinearContract {
  document: OpenApiDocument;
  /** Formats for the validator, one per distinct pattern: `matches <pattern>`. */
  formats: Record<string, Format>;
}

/** The document with each string `pattern` turned into a re2js-checked format (in place). */
export function withLinearPatterns(document: OpenApiDocument): LinearContract {
  const formats: Record<string, Format> = {};
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      const schema = node as Record<string, unknown>;
      if (typeof schema.pattern === 'string' && schema.format === undefined) {
        const name = `matches ${schema.pattern}`;
        if (!formats[name]) {
          const re = linearPattern(schema.pattern);
          formats[name] = { type: 'string', validate: (value: string) => re.test(value) };
        }
        schema.format = name;
        delete schema.pattern;
      }
      Object.values(schema).forEach(visit);
    }
  };
  visit(document);
  return { document, formats };
}
