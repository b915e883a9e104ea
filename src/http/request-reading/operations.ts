/**
 * Which documented operation a request is for, and the query parameters that operation takes,
 * read from the OpenAPI document the validator uses. Paths are matched as the validator matches
 * them: a literal segment wins over a templated one (`/nmdcschema/version` before
 * `/nmdcschema/{collection_name}`), and a template may end inside a segment
 * (`/sites/{site_id}:generateCredentials`).
 */
import { resolveRef, type OpenApiDocument } from '../openapi-documents.ts';

/** How the original turns the text of a query parameter into a value. */
export type QueryParameterKind = 'list' | 'boolean' | 'single';

export interface QueryParameter {
  name: string;
  kind: QueryParameterKind;
  /** For a list, how each item is read. */
  itemKind?: Exclude<QueryParameterKind, 'list'>;
}

interface Operation {
  method: string;
  pattern: RegExp;
  /** Templated segments; fewer sorts first, so literal paths win. */
  templated: number;
  literalLength: number;
  query: QueryParameter[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function kindOf(schema: Record<string, any> | undefined): Exclude<QueryParameterKind, 'list'> {
  return schema?.type === 'boolean' ? 'boolean' : 'single';
}

export class OperationIndex {
  private readonly operations: Operation[] = [];

  constructor(document: OpenApiDocument) {
    const resolve = (node: Record<string, any>): Record<string, any> => resolveRef(document, node);
    for (const [pathName, item] of Object.entries<Record<string, any>>(document.paths)) {
      const source = pathName
        .split(/(\{[^}]+\})/)
        .map((part) => (/^\{[^}]+\}$/.test(part) ? '([^/]+)' : escapeRegExp(part)))
        .join('');
      const templated = (pathName.match(/\{[^}]+\}/g) ?? []).length;
      const literalLength = pathName.replace(/\{[^}]+\}/g, '').length;
      const shared: Record<string, any>[] = (item.parameters ?? []).map(resolve);
      for (const method of METHODS) {
        const operation = item[method];
        if (!operation) continue;
        const parameters = [...shared, ...(operation.parameters ?? []).map(resolve)];
        const query = parameters
          .filter((p) => p?.in === 'query')
          .map((p): QueryParameter => {
            const schema = resolve(p.schema ?? {});
            return schema.type === 'array'
              ? { name: p.name, kind: 'list', itemKind: kindOf(resolve(schema.items ?? {})) }
              : { name: p.name, kind: kindOf(schema) };
          });
        this.operations.push({ method, pattern: new RegExp(`^${source}$`), templated, literalLength, query });
      }
    }
    this.operations.sort((a, b) => a.templated - b.templated || b.literalLength - a.literalLength);
  }

  /** The query parameters of the operation at `method` and `path`; undefined when none is documented. */
  queryParametersOf(method: string, path: string): QueryParameter[] | undefined {
    const lower = method.toLowerCase();
    // HEAD is answered by the GET route.
    const wanted = lower === 'head' ? ['head', 'get'] : [lower];
    for (const name of wanted) {
      const found = this.operations.find((op) => op.method === name && op.pattern.test(path));
      if (found) return found.query;
    }
    return undefined;
  }
}
