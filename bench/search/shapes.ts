/**
 * The query shapes of the side-by-side search bench (issue 16's table), each written twice: as
 * our request through HTTP and as the same predicate in PostgreSQL over `biosample_set(id, body
 * jsonb)`. The literal parts are fitted to the generator's records (src/data/generator.ts):
 * biosample b is named "<Medium> sample <b> from <place>", in study b % 10, whose site and
 * ecosystem fix its geo_loc_name and env_broad_scale.
 */
import type { Filter } from '../../src/store/port.ts';

export const COLLECTION = 'biosample_set';

/** The SQL expression of a dotted path inside `body`, the same text in indexes and queries. */
export function jsonExpression(dotted: string): string {
  const keys = dotted.split('.');
  return keys.length === 1 ? `body ->> '${keys[0]}'` : `body #>> '{${keys.join(',')}}'`;
}

/** A `$regex` on one path: the first page of 25 by id. */
export interface PageShape {
  label: string;
  path: string;
  pattern: string;
  insensitive: boolean;
}

/** A compact `.search` whose `meta.count` is large. */
export interface CountShape {
  label: string;
  path: string;
  text: string;
}

/**
 * The page shapes at `size` biosamples. Changes from the issue's literals, so that each shape
 * matches what it is meant to on these records: `a.b` matches no generated name, `a.e` matches 30%
 * (still no trigram to narrow on); "... 99[0-9]{3} river" cannot match (" from <place>" follows
 * the number), "... 99[0-9]{3} from East River" matches 100 (the Sediment study at East River).
 * Below 100,000 records the numbers 1234x and 99xxx do not exist, so the selective shapes drop a
 * digit (123x: 10 matches, 9xxx: 100 at 10,000).
 */
export function pageShapes(size: number): PageShape[] {
  const large = size >= 100_000;
  const shape = (path: string, pattern: string, insensitive = false): PageShape => ({
    label: `${path} ~ /${pattern}/${insensitive ? 'i' : ''}`,
    path,
    pattern,
    insensitive,
  });
  return [
    shape('geo_loc_name.has_raw_value', 'Toolik'),
    shape('env_broad_scale.term.name', 'tundra', true),
    shape('geo_loc_name.has_raw_value', '^Germany'),
    shape('name', 'a.e'),
    shape('name', large ? 'sample 1234[0-9] ' : 'sample 123[0-9] '),
    shape(
      'name',
      large ? 'Sediment sample 99[0-9]{3} from East River' : 'Sediment sample 9[0-9]{3} from East River',
    ),
  ];
}

/** Month 03 of collection_date: 1/12 of the records (the issue asks for ~7.5%). */
export const countShape: CountShape = {
  label: 'collection_date.has_raw_value.search:-03-',
  path: 'collection_date.has_raw_value',
  text: '-03-',
};

/** The paths the PostgreSQL side puts a trigram index on. */
export function indexedPaths(size: number): string[] {
  return [...new Set([...pageShapes(size).map((s) => s.path), countShape.path])];
}

const enc = encodeURIComponent;

export function pageFilter(shape: PageShape): Filter {
  return {
    [shape.path]: shape.insensitive ? { $regex: shape.pattern, $options: 'i' } : { $regex: shape.pattern },
  };
}

/** Our request for the first page of 25 (by id) of `filter`. */
export function pagePath(filter: Filter): string {
  return `/nmdcschema/${COLLECTION}?filter=${enc(JSON.stringify(filter))}&max_page_size=25`;
}

export function countPath(shape: CountShape): string {
  return `/biosamples?filter=${enc(`${shape.path}.search:${shape.text}`)}&per_page=25`;
}

/** `.search` is a case-insensitive substring: the same as a `~*` of the escaped text. */
export function searchPattern(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function pageSql(shape: PageShape, select: 'body' | 'id'): string {
  const op = shape.insensitive ? '~*' : '~';
  return `SELECT ${select} FROM ${COLLECTION} WHERE ${jsonExpression(shape.path)} ${op} $1 ORDER BY id LIMIT 25`;
}

export function countSql(shape: CountShape): string {
  return `SELECT count(*)::int AS n FROM ${COLLECTION} WHERE ${jsonExpression(shape.path)} ~* $1`;
}

export function countPageSql(shape: CountShape): string {
  return `SELECT id FROM ${COLLECTION} WHERE ${jsonExpression(shape.path)} ~* $1 ORDER BY id LIMIT 25`;
}
