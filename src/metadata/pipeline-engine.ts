/**
 * mingo (MongoDB's aggregation and update semantics) with every regular expression on the
 * linear-time engine. mingo runs `$regex`, `$regexMatch`, `$regexFind` and `$regexFindAll` on
 * V8's backtracking engine, where `^(a+)+$` over thirty letters holds the process for minutes; here
 * they run on re2js, read with MongoDB's options as the filters of the finds are
 * (`compileRegex`), and a pattern RE2 cannot run is a 422 that says why.
 *
 * `$dateFromString` builds a V8 expression from its `format`: formats are held to their
 * specifiers (each at most once) and literal separators, so what it builds stays linear.
 * Operators that run code (`$where`, `$function`, `$accumulator`) and stages that write or read
 * other collections by themselves are not in this engine at all.
 */
import { Aggregator } from 'mingo/aggregator';
import { Context, evalExpr } from 'mingo/core';
import { updateMany } from 'mingo/updater';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import type { RE2JS } from 're2js';
import { UnsupportedQuery } from '../errors.ts';
import { compileRegex, rewriteRegexes, RE2_QUERY_OPERATORS } from '../store/filter.ts';
import type { Doc } from '../store/port.ts';

type Operator = (...args: any[]) => any;
type Options = Parameters<typeof evalExpr>[2];

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

interface RegexArguments {
  input?: unknown;
  regex?: unknown;
  options?: unknown;
}

interface RegexMatch {
  match: string;
  idx: number;
  captures: Array<string | null>;
}

/** The code points of `text` between two UTF-16 offsets (MongoDB's `idx` counts code points). */
function codePointsBetween(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < to) i++;
    n++;
  }
  return n;
}

/** `$regexMatch` / `$regexFind` / `$regexFindAll` on re2js; `undefined` for a null or missing input. */
function regexSearch(
  name: string,
  obj: unknown,
  expr: unknown,
  options: Options,
  all: boolean,
): RegexMatch[] | undefined {
  const args = evalExpr(obj, expr, options) as RegexArguments;
  if (!isObject(args)) throw new UnsupportedQuery(`${name} takes an object {input, regex, options}`);
  const { input, regex, options: flags } = args;
  if (input === null || input === undefined) return undefined;
  if (typeof input !== 'string') throw new UnsupportedQuery(`${name} needs input to be a string`);
  if (typeof regex !== 'string') throw new UnsupportedQuery(`${name} needs regex to be a string`);
  if (flags !== undefined && flags !== null && typeof flags !== 'string')
    throw new UnsupportedQuery(`${name} needs options to be a string`);
  const re: RE2JS = compileRegex(regex, flags ?? '');
  const matcher = re.matcher(input);
  const out: RegexMatch[] = [];
  let offset = 0;
  let codePoints = 0;
  // Each find starts after the previous match (one character on after an empty one): linear.
  while (matcher.find()) {
    const start = matcher.start();
    codePoints += codePointsBetween(input, offset, start);
    offset = start;
    const captures: Array<string | null> = [];
    for (let g = 1; g <= matcher.groupCount(); g++) captures.push(matcher.group(g) ?? null);
    out.push({ match: matcher.group(0) ?? '', idx: codePoints, captures });
    if (!all) break;
  }
  return out;
}

const REGEX_EXPRESSIONS: Record<string, Operator> = {
  $regexMatch: (obj: unknown, expr: unknown, options: Options) =>
    (regexSearch('$regexMatch', obj, expr, options, false)?.length ?? 0) > 0,
  $regexFind: (obj: unknown, expr: unknown, options: Options) =>
    regexSearch('$regexFind', obj, expr, options, false)?.[0] ?? null,
  $regexFindAll: (obj: unknown, expr: unknown, options: Options) =>
    regexSearch('$regexFindAll', obj, expr, options, true) ?? [],
};

/** Characters that would reach `$dateFromString`'s regular expression as syntax, not as text. */
const REGEX_SYNTAX = new Set('\\^$|?*+()[]{}');

/** Holds a `$dateFromString` format to its specifiers (each once) and literal separators. */
export function checkDateFormat(format: unknown): void {
  if (format === undefined || format === null) return;
  if (typeof format !== 'string') throw new UnsupportedQuery('$dateFromString needs format to be a string');
  const seen = new Set<string>();
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c === '%') {
      const specifier = format.slice(i, i + 2);
      if (seen.has(specifier))
        throw new UnsupportedQuery(`$dateFromString format names ${specifier} more than once`);
      seen.add(specifier);
      i++;
    } else if (REGEX_SYNTAX.has(c)) {
      throw new UnsupportedQuery(
        `$dateFromString format may hold only %-specifiers and literal separators, not "${c}"`,
      );
    }
  }
}

const builtinDateFromString = (expressionOperators as unknown as Record<string, Operator>).$dateFromString!;

const dateFromString: Operator = (obj: unknown, expr: unknown, options: Options) => {
  const args = evalExpr(obj, expr, options);
  if (isObject(args)) checkDateFormat(args.format);
  // The arguments are values now: passed as a literal so that they are not evaluated twice.
  return builtinDateFromString(obj, { $literal: args }, options);
};

/** The `$regex` query operator on re2js, for any `$regex` that reached mingo unrewritten. */
const linearRegexOperator: Operator = (selector: string, value: unknown) => {
  const re =
    value instanceof RegExp
      ? compileRegex(value.source, value.flags.replace(/[dguvy]/g, ''))
      : compileRegex(String(value));
  return RE2_QUERY_OPERATORS.$re2Match(selector, re);
};

/** The operators of a mingo module (its `$`-named exports) but `names`. */
function without(ops: object, names: string[]): Record<string, Operator> {
  return Object.fromEntries(
    Object.entries(ops).filter(([name]) => name.startsWith('$') && !names.includes(name)),
  ) as Record<string, Operator>;
}

type ContextOps = NonNullable<Parameters<typeof Context.init>[0]>;

/** Every mingo operator the service runs, with the regular-expression ones on re2js. */
const LINEAR_CONTEXT = Context.init({
  accumulator: without(accumulatorOperators, ['$accumulator']),
  expression: {
    ...without(expressionOperators, ['$function']),
    ...REGEX_EXPRESSIONS,
    $dateFromString: dateFromString,
  },
  pipeline: without(pipelineOperators, ['$out', '$merge', '$unionWith', '$graphLookup', '$documents']),
  projection: without(projectionOperators, []),
  query: { ...without(queryOperators, ['$where']), ...RE2_QUERY_OPERATORS, $regex: linearRegexOperator },
  window: without(windowOperators, []),
} as unknown as ContextOps);

const OPTIONS = { context: LINEAR_CONTEXT, scriptEnabled: false, idKey: '_id' };

/**
 * Stages with every `{$regex, $options}` query (in `$match`, `$elemMatch`, sub-pipelines) compiled
 * for re2js; `$literal` values are left as they are.
 */
export function linearStages<T>(node: T): T {
  if (Array.isArray(node)) return node.map(linearStages) as T;
  if (!isObject(node)) return node;
  if ('$regex' in node) return rewriteRegexes(node) as T;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node))
    out[key] = key === '$literal' ? value : linearStages(value);
  return out as T;
}

/** Runs stages (already passed through `linearStages`) over documents. */
export function runLinearPipeline(stages: Array<Record<string, unknown>>, docs: Doc[]): Doc[] {
  return new Aggregator(stages, OPTIONS).run(docs) as Doc[];
}

/**
 * mingo's `updateMany` with the regular expressions of the condition, the update (`$pull`
 * conditions) and the array filters on re2js.
 */
export function updateManyLinear(
  documents: Array<Record<string, unknown>>,
  condition: Record<string, unknown>,
  modifier: Record<string, unknown>,
  config: { arrayFilters?: Array<Record<string, unknown>>; cloneMode?: 'deep' | 'copy' | 'none' },
): void {
  updateMany(
    documents,
    linearStages(condition) as never,
    linearStages(modifier) as never,
    { ...config, arrayFilters: linearStages(config.arrayFilters) },
    OPTIONS,
  );
}
