/**
 * The statement checks of `update` and `delete` on their own, for the shapes the contract's
 * validator refuses before them over HTTP (so they hold for any caller of QueryCommands).
 */
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import { statusOf } from '../../src/http/error-handler.ts';
import {
  MAX_UPDATE_PATHS,
  MAX_WRITE_STATEMENTS,
  deleteStatementsOf,
  updateStatementsOf,
  usesPositional,
} from '../../src/metadata/write-statements.ts';

async function refusal(check: () => Promise<unknown>): Promise<{ status: number; detail: unknown }> {
  try {
    await check();
  } catch (err) {
    if (err instanceof DomainError) return { status: statusOf(err), detail: err.detail };
    throw err;
  }
  throw new Error('not refused');
}

describe('delete statements', () => {
  it.each([
    [
      { deletes: { q: {}, limit: 0 } },
      'deletes must be a list of statements, e.g. [{"q": {"id": "nmdc:bsm-11-abc"}, "limit": 1}], not an object',
    ],
    [{ deletes: [7] }, 'deletes[0] must be an object {"q": <filter>, "limit": 0 or 1}'],
    [{ deletes: [{ q: 'x', limit: 1 }] }, 'deletes[0].q must be an object (a filter), not a string'],
    [{ deletes: [{ q: [], limit: 1 }] }, 'deletes[0].q must be an object (a filter), not an array'],
    [
      { deletes: [{ q: {}, limit: true }] },
      'deletes[0].limit must be 0 (every match) or 1 (the first match), not true',
    ],
    [
      { deletes: [{ q: {}, limit: 0, hint: 5 }] },
      'deletes[0].hint must be an index name or an index key pattern',
    ],
    [
      { deletes: Array.from({ length: MAX_WRITE_STATEMENTS + 1 }, () => ({ q: {}, limit: 0 })) },
      'deletes must hold between 1 and 100000 statements, not 100001',
    ],
  ])('refuses %# with a 422 naming the place', async (command, detail) => {
    expect(await refusal(() => deleteStatementsOf(command))).toEqual({ status: 422, detail });
  });

  it('reads q and limit, and ignores fields a statement does not have', async () => {
    expect(
      await deleteStatementsOf({
        deletes: [
          { q: { id: 'a' }, limit: 1, hint: { id: 1 }, note: 'x' },
          { q: {}, limit: 0 },
        ],
      }),
    ).toEqual([
      { q: { id: 'a' }, limit: 1 },
      { q: {}, limit: 0 },
    ]);
  });
});

describe('update statements', () => {
  it.each([
    [
      { q: {}, u: 'x' },
      'updates[0].u must be an object, update operators or a replacement record, not a string',
    ],
    [
      { q: {}, u: [{ $set: { a: 1 } }] },
      'updates[0].u is a pipeline: pipeline updates are not supported, use update operators ($set, $unset, ...)',
    ],
    [{ q: {}, u: {}, multi: 'yes' }, 'updates[0].multi must be true or false, not a string'],
    [
      { q: {}, u: { $set: { a: 1 } }, arrayFilters: {} },
      'updates[0].arrayFilters must be a list of filter objects',
    ],
    [{ q: {}, u: { a: 1 }, arrayFilters: [] }, 'updates[0].arrayFilters only apply to update operators'],
    [{ q: {}, u: { a: { $b: 1 } } }, 'updates[0].u: the field a.$b of a replacement record starts with $'],
    [{ q: {}, u: { 'a.b': 1 } }, 'updates[0].u: "a.b" is not a valid field name in a record'],
    [
      { q: {}, u: { $rename: { a: 'a.b' } } },
      "updates[0].u: updating the path 'a.b' would create a conflict at 'a', as in MongoDB",
    ],
    [
      { q: {}, u: { $set: { 'a.$': 1 } }, c: {} },
      'updates[0].c is not supported: constants are for pipeline updates, which are not supported',
    ],
    [
      { q: { s: { $regex: 'x' } }, u: { $set: { 'a.$': 1 } } },
      'updates[0].q (with a positional $ update): $regex is not supported here (use $in or $eq with literal values)',
    ],
    [
      { q: {}, u: { $set: { '$.a': 1 } } },
      'updates[0].u.$set: the field "$.a" starts a name with $ (only positional $, $[] and $[<id>] may)',
    ],
    [
      { q: {}, u: { $bit: { a: { and: 1.5 } } } },
      'updates[0].u.$bit.a must be {"and" | "or" | "xor": <integer>}, not {"and":1.5}',
    ],
    [
      { q: {}, u: { $push: { a: { $each: [1], $slice: 'x' } } } },
      'updates[0].u.$push.a $slice must be an integer, not {"$each":[1],"$slice":"x"}',
    ],
    [
      { q: {}, u: { $addToSet: { a: { $each: [1], $sort: 1 } } } },
      'updates[0].u.$addToSet.a may hold $each ($sort is not one of them), not {"$each":[1],"$sort":1}',
    ],
  ])('refuses %j with a 422 naming the place', async (statement, detail) => {
    expect(await refusal(() => updateStatementsOf({ updates: [statement] }))).toEqual({
      status: 422,
      detail,
    });
  });

  it('finds overlapping paths among the most a statement may name, and refuses more', async () => {
    const fields = Object.fromEntries(Array.from({ length: MAX_UPDATE_PATHS - 1 }, (_, i) => [`f${i}.x`, i]));
    expect(
      await refusal(() => updateStatementsOf({ updates: [{ q: {}, u: { $set: { ...fields, f7: 1 } } }] })),
    ).toEqual({
      status: 422,
      detail: "updates[0].u: updating the path 'f7.x' would create a conflict at 'f7', as in MongoDB",
    });
    expect(
      await refusal(() =>
        updateStatementsOf({ updates: [{ q: {}, u: { $set: fields, $unset: { a: '', b: '' } } }] }),
      ),
    ).toEqual({
      status: 422,
      detail: 'updates[0].u names more than 10000 fields: split it into several statements',
    });
  });

  it('reads operators, replacements, flags and array filters', async () => {
    const [ops, replacement] = await updateStatementsOf({
      updates: [
        {
          q: { id: 'a' },
          u: { $set: { 'x.$[e].y': 1 }, $inc: { n: 2 } },
          multi: true,
          arrayFilters: [{ 'e.k': 1 }],
        },
        { q: {}, u: { name: 'n', list: [{ k: 1 }] }, upsert: true, limit: 1 },
      ],
    });
    expect(ops).toEqual({
      q: { id: 'a' },
      u: { kind: 'operators', operators: { $set: { 'x.$[e].y': 1 }, $inc: { n: 2 } } },
      upsert: false,
      multi: true,
      arrayFilters: [{ 'e.k': 1 }],
    });
    expect(replacement).toEqual({
      q: {},
      u: { kind: 'replacement', record: { name: 'n', list: [{ k: 1 }] } },
      upsert: true,
      multi: false,
    });
    expect(usesPositional(ops!.u as never)).toBe(false);
    expect(usesPositional({ kind: 'operators', operators: { $set: { 'a.$.b': 1 } } })).toBe(true);
  });
});
