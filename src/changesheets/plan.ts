/**
 * From a changesheet's rows to update statements per record, as the original reads a sheet:
 *
 * - A row whose `id` holds a colon names a record; a row without an id continues the previous
 *   record, and a row without an action repeats the previous row's action.
 * - An `id` without a colon is a variable: a row of the record whose `value` is that name gives the
 *   variable its place (`nmdc:sty-11-x  insert  has_credit_associations  v1`), and the rows with the
 *   variable as id fill in the object it stands for (`v1  applied_roles  Investigation`). Variables
 *   belong to the record they are written under, and may hold variables themselves.
 * - The `attribute` is a slot of the record's class, or a dotted path to a nested value
 *   (`principal_investigator.name`); the schema says whether it holds a list and how its value is
 *   typed. A list value is written as items separated by `|`.
 * - Actions (the original's vocabulary): `insert`, `insert item`, `insert items` add items to a
 *   list (`$addToSet`); `remove item`, `remove items` remove them (`$pull`); `update`, `set`,
 *   `replace`, `replace items` set the value (`$set`); `remove`, `delete` drop the attribute
 *   (`$unset`). A variable's object takes the action of the row that gives it its place.
 */
import { ChangesheetProblems } from './problems.ts';
import type { SheetRow } from './sheet.ts';
import {
  AttributePathError,
  classOfTypeValue,
  hasSubclasses,
  rangeOfCollection,
  resolvePath,
  typedValue,
  type PathStep,
} from './attribute-paths.ts';
import type { UpdateStatement } from './update-operators.ts';

type Operator = '$set' | '$unset' | '$addToSet' | '$pull';

/** The original's action names and the update each one makes. */
export const ACTIONS: Readonly<Record<string, Operator>> = {
  insert: '$addToSet',
  'insert items': '$addToSet',
  'insert item': '$addToSet',
  'remove items': '$pull',
  'remove item': '$pull',
  update: '$set',
  set: '$set',
  replace: '$set',
  'replace items': '$set',
  remove: '$unset',
  delete: '$unset',
};

const ACTION_LIST = Object.keys(ACTIONS)
  .map((a) => `'${a}'`)
  .join(', ');

/** Action names compare without case and with runs of spaces as one. */
export function normalizedAction(action: string): string {
  return action.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** A record's rows (its own and its variables'), from where its id is written to the next record id. */
export interface RecordBlock {
  recordId: string;
  /** Line and rows; every row's `action` is filled in (and known) and `variable` set for variable rows. */
  rows: BlockRow[];
}

export interface BlockRow extends SheetRow {
  /** The variable this row fills in, when its id is a variable. */
  variable?: string;
}

/** Splits the rows into record blocks, filling in ids and actions; problems are added to `problems`. */
export function blocksOf(rows: SheetRow[], problems: ChangesheetProblems): RecordBlock[] {
  const blocks: RecordBlock[] = [];
  let current: RecordBlock | undefined;
  let previousAction = '';
  for (const row of rows) {
    let action = previousAction;
    if (row.action !== '') {
      action = normalizedAction(row.action);
      if (!Object.hasOwn(ACTIONS, action)) {
        problems.add(row.line, 'action', `unknown action '${row.action}' (the actions are ${ACTION_LIST})`);
      }
      previousAction = action;
    } else if (action === '') {
      problems.add(
        row.line,
        'action',
        'the row has no action and there is no row before it to take one from',
      );
    }
    if (row.attribute === '') problems.add(row.line, 'attribute', 'the attribute is empty');

    if (row.id.includes(':')) {
      current = { recordId: row.id, rows: [] };
      blocks.push(current);
    } else if (current === undefined) {
      problems.add(
        row.line,
        'id',
        row.id === ''
          ? 'the first row must name a record id (rows without an id continue the previous record)'
          : `'${row.id}' is a variable (it has no colon), but no record id comes before it`,
      );
      continue;
    }
    current.rows.push({
      ...row,
      action,
      ...(row.id !== '' && !row.id.includes(':') ? { variable: row.id } : {}),
    });
  }
  return blocks;
}

/** One update statement and the line of the sheet it comes from. */
export interface PlannedUpdate {
  line: number;
  statement: UpdateStatement;
}

export interface RecordPlan {
  id: string;
  collection: string;
  updates: PlannedUpdate[];
}

/** The class a record is an instance of: its `type`, else its collection's class when that has no subclasses. */
export function classOfRecord(collection: string, record: Record<string, unknown>): string | undefined {
  const byType = classOfTypeValue(record.type);
  if (byType) return byType;
  const range = rangeOfCollection(collection);
  return range && !hasSubclasses(range) ? range : undefined;
}

function valueAt(record: unknown, parts: string[]): unknown {
  let at = record;
  for (const part of parts) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** Pipe-separated items, each trimmed and typed; empty items are dropped (as the original does). */
function listValue(text: string, range: string): unknown[] {
  return text
    .split('|')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => typedValue(item, range));
}

/** Plans the updates of one record block against the record as it is now. */
export class BlockPlanner {
  private readonly variableRows = new Map<string, BlockRow[]>();
  /** Variable -> the row whose value it is. */
  private readonly placeOf = new Map<string, BlockRow>();

  constructor(
    private readonly block: RecordBlock,
    private readonly collection: string,
    private readonly record: Record<string, unknown>,
    private readonly problems: ChangesheetProblems,
  ) {
    for (const row of block.rows) {
      if (row.variable === undefined) continue;
      const list = this.variableRows.get(row.variable) ?? [];
      list.push(row);
      this.variableRows.set(row.variable, list);
    }
    for (const row of block.rows) {
      if (!this.variableRows.has(row.value)) continue;
      const earlier = this.placeOf.get(row.value);
      if (earlier) {
        problems.add(
          row.line,
          'value',
          `the variable '${row.value}' already stands for '${earlier.attribute}' (line ${earlier.line}), give each object its own variable`,
        );
        continue;
      }
      this.placeOf.set(row.value, row);
    }
    for (const [variable, rows] of this.variableRows) {
      if (!this.placeOf.has(variable)) {
        problems.add(
          rows[0]!.line,
          'id',
          `the variable '${variable}' is not the value of any row of ${block.recordId} (a row such as ` +
            `'${block.recordId}  update  <attribute>  ${variable}' says where its object goes)`,
        );
      } else if (this.inCycle(variable)) {
        problems.add(
          rows[0]!.line,
          'id',
          `the variable '${variable}' holds itself (through the rows that place it)`,
        );
        this.placeOf.delete(variable);
      }
    }
  }

  private inCycle(variable: string): boolean {
    const seen = new Set<string>();
    for (let v: string | undefined = variable; v !== undefined; v = this.placeOf.get(v)?.variable) {
      if (seen.has(v)) return true;
      seen.add(v);
    }
    return false;
  }

  /** The record's updates in the order of the sheet (variables' rows feed the row that places them). */
  plan(): RecordPlan {
    const className = classOfRecord(this.collection, this.record);
    const updates: PlannedUpdate[] = [];
    const first = this.block.rows[0];
    if (className === undefined) {
      if (first) {
        this.problems.add(
          first.line,
          'id',
          `cannot tell the class of ${this.block.recordId} in ${this.collection}: the record has no known 'type'`,
        );
      }
      return { id: this.block.recordId, collection: this.collection, updates };
    }
    for (const row of this.block.rows) {
      if (row.variable !== undefined || row.attribute === '' || !Object.hasOwn(ACTIONS, row.action)) continue;
      const statement = this.statementOf(row, className);
      if (statement) updates.push({ line: row.line, statement });
    }
    return { id: this.block.recordId, collection: this.collection, updates };
  }

  private statementOf(row: BlockRow, className: string): UpdateStatement | undefined {
    const parts = row.attribute.split('.');
    if (parts[0] === 'id') {
      this.problems.add(row.line, 'attribute', "a record's id cannot be changed by a changesheet");
      return undefined;
    }
    const steps = this.resolve(row, className, {
      hintAt: (depth) =>
        depth === 0 ? undefined : classOfTypeValue(valueAt(this.record, [...parts.slice(0, depth), 'type'])),
    });
    if (!steps) return undefined;
    const last = steps[steps.length - 1]!;
    const operator = ACTIONS[row.action]!;
    if ((operator === '$addToSet' || operator === '$pull') && !last.multivalued) {
      this.problems.add(
        row.line,
        'action',
        `'${row.action}' changes the items of a list, but '${row.attribute}' of ${className} holds one value (use 'update')`,
      );
      return undefined;
    }
    if (operator === '$unset') return { $unset: { [row.attribute]: '' } };
    const value = this.valueOf(row, last);
    if (value === undefined) return undefined;
    switch (operator) {
      case '$set':
        return { $set: { [row.attribute]: value } };
      case '$addToSet':
        return { $addToSet: { [row.attribute]: { $each: value as unknown[] } } };
      case '$pull':
        return { $pull: { [row.attribute]: { $in: value as unknown[] } } };
    }
  }

  private resolve(
    row: BlockRow,
    className: string,
    options: Parameters<typeof resolvePath>[2],
  ): PathStep[] | undefined {
    try {
      return resolvePath(className, row.attribute, options);
    } catch (err) {
      if (!(err instanceof AttributePathError)) throw err;
      this.problems.add(row.line, 'attribute', err.message);
      return undefined;
    }
  }

  /** The row's value for its last step: typed text, a `|` list, or the object of the variable it places. */
  private valueOf(row: BlockRow, last: PathStep): unknown {
    const placed = this.placeOf.get(row.value) === row ? row.value : undefined;
    if (placed === undefined)
      return last.multivalued ? listValue(row.value, last.range) : typedValue(row.value, last.range);
    if (!last.rangeClass) {
      this.problems.add(
        row.line,
        'value',
        `'${row.value}' is a variable, which stands for an object, but '${row.attribute}' holds ${last.range} values`,
      );
      return undefined;
    }
    const object = this.objectOf(placed, last.rangeClass);
    if (object === undefined) return undefined;
    return last.multivalued ? [object] : object;
  }

  /** The object a variable stands for, built from its rows (their action column is not used). */
  private objectOf(variable: string, rangeClass: string): Record<string, unknown> | undefined {
    const rows = this.variableRows.get(variable) ?? [];
    // The object's own `type` row may name a subclass of the range (e.g. QuantityValue for AttributeValue).
    const typeRow = rows.find((r) => r.attribute === 'type');
    const hinted = typeRow ? classOfTypeValue(typeRow.value) : undefined;
    const object: Record<string, unknown> = {};
    const listParts = new Set<string>();
    const setAt = new Map<string, number>();
    let ok = true;
    for (const row of rows) {
      if (row.attribute === '') continue;
      const steps = this.resolve(row, rangeClass, {
        throughLists: true,
        hintAt: (depth) => (depth === 0 ? hinted : undefined),
      });
      if (!steps) {
        ok = false;
        continue;
      }
      const last = steps[steps.length - 1]!;
      const value = this.valueOf(row, last);
      if (value === undefined) {
        ok = false;
        continue;
      }
      const parts = row.attribute.split('.');
      steps.slice(0, -1).forEach((step, i) => {
        if (step.multivalued) listParts.add(parts.slice(0, i + 1).join('.'));
      });
      let at = object;
      for (const part of parts.slice(0, -1)) {
        const next = at[part];
        if (typeof next === 'object' && next !== null && !Array.isArray(next))
          at = next as Record<string, unknown>;
        else at = at[part] = {};
      }
      const key = parts[parts.length - 1]!;
      const earlier = setAt.get(row.attribute);
      if (earlier !== undefined && last.multivalued && Array.isArray(at[key]) && Array.isArray(value)) {
        (at[key] as unknown[]).push(...value);
      } else if (earlier !== undefined) {
        this.problems.add(
          row.line,
          'attribute',
          `'${row.attribute}' of '${variable}' is already given on line ${earlier}`,
        );
        ok = false;
      } else {
        at[key] = value;
        setAt.set(row.attribute, row.line);
      }
    }
    if (!ok) return undefined;
    // A list slot on the way to a value holds the one object the rows describe; deepest first.
    for (const path of [...listParts].sort((a, b) => b.split('.').length - a.split('.').length)) {
      const parts = path.split('.');
      const parent = valueAt(object, parts.slice(0, -1)) as Record<string, unknown>;
      const key = parts[parts.length - 1]!;
      if (!Array.isArray(parent[key])) parent[key] = [parent[key]];
    }
    return object;
  }
}
