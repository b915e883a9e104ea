/**
 * Changesheets without a server: reading TSV and CSV uploads, continuation rows, quoting, dotted
 * attributes and variables, each action on plain values, lists and nested objects, the typing of
 * values by the schema, the problems a bad sheet is refused with (each naming its line and
 * column), and property checks of the list and value semantics against a simple model.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Doc } from '../../src/store/port.ts';
import { DomainError } from '../../src/errors.ts';
import { statusOf } from '../../src/http/error-handler.ts';
import { readSheet, contentTypeOf } from '../../src/changesheets/sheet.ts';
import {
  changesOf,
  portableName,
  updateCommandsOf,
  recordIdsOf,
} from '../../src/changesheets/changesheets.ts';
import { applyStatement, UpdateConflict } from '../../src/changesheets/update-operators.ts';

const FIXTURES = new URL('../fixtures/changesheets/', import.meta.url);
const RECORDS = JSON.parse(fs.readFileSync(new URL('records.json', FIXTURES), 'utf8')) as Record<
  string,
  Doc[]
>;
const STUDY = RECORDS.study_set![0]!;
const BIOSAMPLE = RECORDS.biosample_set![0]!;
const DATA_OBJECT = RECORDS.data_object_set![0]!;

/** The fixture records (or these), as the store would find them by id. */
function recordsById(docs: Record<string, Doc[]> = RECORDS) {
  const map = new Map<string, { collection: string; doc: Doc }>();
  for (const [collection, list] of Object.entries(docs))
    for (const doc of list) map.set(doc.id, { collection, doc: structuredClone(doc) });
  return map;
}

/** A TSV sheet from rows of cells (header added). */
function tsv(rows: string[][]): string {
  return ['id\taction\tattribute\tvalue', ...rows.map((r) => r.join('\t'))].join('\n') + '\n';
}

/** The records after the sheet, by id. */
function apply(text: string, filename = 'sheet.tsv', docs?: Record<string, Doc[]>): Record<string, Doc> {
  const sheet = readSheet({ filename, content: Buffer.from(text) });
  const out: Record<string, Doc> = {};
  for (const change of changesOf(sheet.rows, recordsById(docs))) out[change.id] = change.doc_after;
  return out;
}

/** The 400 detail a sheet is refused with. */
function refusal(text: string, filename = 'sheet.tsv', contentType?: string): string {
  try {
    const sheet = readSheet({ filename, contentType, content: Buffer.from(text) });
    changesOf(sheet.rows, recordsById());
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect(statusOf(err as DomainError)).toBe(400);
    return (err as DomainError).detail as string;
  }
  throw new Error('the sheet was accepted');
}

describe('reading a changesheet upload', () => {
  it('takes the format from the extension, else from the content type', () => {
    expect(contentTypeOf({ filename: 'fix.TSV', contentType: 'text/csv' })).toBe('text/tab-separated-values');
    expect(contentTypeOf({ filename: 'fix.csv' })).toBe('text/csv');
    expect(contentTypeOf({ filename: 'fix.txt', contentType: 'text/csv; charset=utf-8' })).toBe('text/csv');
    expect(refusal('id\taction\tattribute\tvalue\n', 'fix.txt', 'text/plain')).toBe(
      "file fix.txt has content type 'text/plain'. Only ['text/csv', 'text/tab-separated-values'] files are permitted.",
    );
  });

  it('reads CSV with quoting, a BOM, CRLF line ends, extra columns in any order and multi-line values', () => {
    const csv =
      '\ufeffcomment,action,id,attribute,value\r\n' +
      'rename,update,nmdc:sty-11-8fb6t785,name,"Marsh cores, ""tidal"" set"\r\n' +
      '"two\r\nlines",update,,description,"First line\nsecond line"\r\n' +
      'blank line follows,insert,,websites,https://example.org/q\r\n' +
      '\r\n' +
      ',,,,\r\n';
    const sheet = readSheet({ filename: 'fix.csv', content: Buffer.from(csv) });
    expect(sheet.contentType).toBe('text/csv');
    expect(sheet.rows).toEqual([
      {
        line: 2,
        id: 'nmdc:sty-11-8fb6t785',
        action: 'update',
        attribute: 'name',
        value: 'Marsh cores, "tidal" set',
      },
      { line: 3, id: '', action: 'update', attribute: 'description', value: 'First line\nsecond line' },
      { line: 6, id: '', action: 'insert', attribute: 'websites', value: 'https://example.org/q' },
    ]);
    const after = changesOf(sheet.rows, recordsById())[0]!.doc_after;
    expect(after.name).toBe('Marsh cores, "tidal" set');
    expect(after.description).toBe('First line\nsecond line');
    expect(after.websites).toEqual(['https://example.org/marsh', 'https://example.org/q']);
  });

  it('keeps quotes inside unquoted TSV cells and reads rows that stop short of the value', () => {
    const sheet = readSheet({
      filename: 'fix.tsv',
      content: Buffer.from(
        'id\taction\tattribute\tvalue\nnmdc:bsm-11-x5xj6p33\tupdate\tname\t5" core\n\tremove\tph\n',
      ),
    });
    expect(sheet.rows.map((r) => [r.line, r.value])).toEqual([
      [2, '5" core'],
      [3, ''],
    ]);
  });

  it('names the record ids once each', () => {
    const sheet = readSheet({
      filename: 'f.tsv',
      content: Buffer.from(
        tsv([
          ['nmdc:a', 'update', 'name', 'x'],
          ['v1', '', 'name', 'y'],
          ['nmdc:a', 'update', 'name', 'z'],
        ]),
      ),
    });
    expect(recordIdsOf(sheet.rows)).toEqual(['nmdc:a']);
  });

  it('keeps a portable file name as the original does', () => {
    expect(portableName('my fixes (v2).tsv')).toBe('my_fixes__v2_.tsv');
    expect(portableName(undefined)).toBeUndefined();
  });
});

describe('applying a changesheet', () => {
  it('applies the marsh corrections fixture to the three records', () => {
    const text = fs.readFileSync(new URL('marsh-corrections.tsv', FIXTURES), 'utf8');
    const sheet = readSheet({ filename: 'marsh-corrections.tsv', content: Buffer.from(text) });
    const changes = changesOf(sheet.rows, recordsById());
    expect(changes.map((c) => [c.id, c.collection, c.update_info])).toEqual([
      ['nmdc:sty-11-8fb6t785', 'study_set', { n: 8, nModified: 8, ok: 1 }],
      ['nmdc:bsm-11-x5xj6p33', 'biosample_set', { n: 2, nModified: 2, ok: 1 }],
      ['nmdc:dobj-11-000n1286', 'data_object_set', { n: 1, nModified: 1, ok: 1 }],
    ]);
    expect(changes[0]!.doc_before).toEqual(STUDY);
    expect(changes[0]!.doc_after).toEqual({
      ...STUDY,
      name: 'Tidal marsh soil cores, 2019',
      // A pipe in a single-valued slot is text, not a list separator.
      description: 'Cores from a tidal marsh | revised',
      principal_investigator: {
        type: 'nmdc:PersonValue',
        name: 'Ada Lovelace',
        has_raw_value: 'Old PI',
        orcid: 'orcid:0000-0002-1825-0097',
        websites: ['https://example.org/ada'],
      },
      websites: ['https://example.org/marsh', 'https://example.org/cores'],
      funding_sources: [],
      has_credit_associations: [
        {
          applied_roles: ['Investigation', 'Supervision'],
          applies_to_person: { name: 'Grace Hopper', type: 'nmdc:PersonValue' },
          type: 'prov:Association',
        },
      ],
    });
    expect(changes[1]!.doc_after).toEqual({
      ...BIOSAMPLE,
      ph: 5.58,
      depth: { has_numeric_value: 0.38, has_unit: 'm', type: 'nmdc:QuantityValue' },
    });
    expect(changes[2]!.doc_after).toEqual({ ...DATA_OBJECT, file_size_bytes: 1271907 });

    const commands = updateCommandsOf(changes);
    expect(commands['nmdc:dobj-11-000n1286']).toEqual({
      update: 'data_object_set',
      updates: [{ q: { id: 'nmdc:dobj-11-000n1286' }, u: { $set: { file_size_bytes: 1271907 } } }],
    });
    expect(commands['nmdc:sty-11-8fb6t785']!.updates[3]).toEqual({
      q: { id: 'nmdc:sty-11-8fb6t785' },
      u: { $pull: { funding_sources: { $in: ['Marsh fund'] } } },
    });
  });

  it('continues the previous record and action on rows without them', () => {
    const after = apply(
      tsv([
        ['nmdc:sty-11-8fb6t785', 'update', 'name', 'A'],
        ['', '', 'description', 'B'],
        ['nmdc:bsm-11-x5xj6p33', '', 'name', 'C'],
        ['', 'insert', 'alternative_identifiers', 'gold:Gb0000001'],
        ['', '', 'alternative_identifiers', 'gold:Gb0000002'],
      ]),
    );
    expect(after['nmdc:sty-11-8fb6t785']).toMatchObject({ name: 'A', description: 'B' });
    expect(after['nmdc:bsm-11-x5xj6p33']).toMatchObject({
      name: 'C',
      alternative_identifiers: ['gold:Gb0000001', 'gold:Gb0000002'],
    });
  });

  it('merges the rows of a record written in two places, in the order of the sheet', () => {
    const after = apply(
      tsv([
        ['nmdc:sty-11-8fb6t785', 'update', 'name', 'first'],
        ['nmdc:bsm-11-x5xj6p33', 'update', 'name', 'sample'],
        ['nmdc:sty-11-8fb6t785', 'update', 'name', 'second'],
      ]),
    );
    expect(after['nmdc:sty-11-8fb6t785']!.name).toBe('second');
  });

  describe('actions on a single value', () => {
    it.each(['update', 'set', 'replace', 'Update', ' replace items '])('%s sets it', (action) => {
      expect(
        apply(tsv([['nmdc:bsm-11-x5xj6p33', action, 'name', 'new name']]))['nmdc:bsm-11-x5xj6p33']!.name,
      ).toBe('new name');
    });

    it.each(['remove', 'delete'])('%s drops it, and dropping what is absent changes nothing', (action) => {
      const sheet = readSheet({
        filename: 's.tsv',
        content: Buffer.from(
          tsv([
            ['nmdc:bsm-11-x5xj6p33', action, 'ph', ''],
            ['', action, 'elev', ''],
          ]),
        ),
      });
      const [change] = changesOf(sheet.rows, recordsById());
      expect(change!.doc_after).not.toHaveProperty('ph');
      expect(change!.update_info).toEqual({ n: 2, nModified: 1, ok: 1 });
      expect(change!.updates.map((u) => u.statement)).toEqual([
        { $unset: { ph: '' } },
        { $unset: { elev: '' } },
      ]);
    });

    it('types values by the range: floats, integers (bytes), booleans; other text stays text', () => {
      const after = apply(
        tsv([
          ['nmdc:bsm-11-x5xj6p33', 'update', 'ph', ' 7.25 '],
          ['', '', 'elev', '-3e2'],
          ['', '', 'embargoed', 'TRUE'],
          ['', '', 'samp_name', '0042'],
          ['', '', 'temp.has_numeric_value', 'warm'],
          ['nmdc:dobj-11-000n1286', 'update', 'file_size_bytes', '1271907'],
        ]),
      );
      expect(after['nmdc:bsm-11-x5xj6p33']).toMatchObject({
        ph: 7.25,
        elev: -300,
        embargoed: true,
        samp_name: '0042',
        // Not a number: kept as text for the schema check to name.
        temp: { has_numeric_value: 'warm' },
      });
      expect(after['nmdc:dobj-11-000n1286']!.file_size_bytes).toBe(1271907);
      expect(
        apply(tsv([['nmdc:dobj-11-000n1286', 'update', 'file_size_bytes', '12.5']]))['nmdc:dobj-11-000n1286']!
          .file_size_bytes,
      ).toBe('12.5');
    });
  });

  describe('actions on lists', () => {
    it('insert adds only items not there yet, creating the list when absent', () => {
      const after = apply(
        tsv([
          [
            'nmdc:sty-11-8fb6t785',
            'insert',
            'websites',
            'https://example.org/marsh | https://example.org/b||',
          ],
          ['', 'insert item', 'alternative_names', 'Marsh'],
          ['', 'insert items', 'alternative_names', 'Marsh|Salt marsh'],
        ]),
      )['nmdc:sty-11-8fb6t785']!;
      expect(after.websites).toEqual(['https://example.org/marsh', 'https://example.org/b']);
      expect(after.alternative_names).toEqual(['Marsh', 'Salt marsh']);
    });

    it('remove items takes out every equal item; removing from an absent list changes nothing', () => {
      const docs = { study_set: [{ ...STUDY, alternative_names: ['a', 'b', 'a', 'c'] }] };
      const sheet = readSheet({
        filename: 's.tsv',
        content: Buffer.from(
          tsv([
            ['nmdc:sty-11-8fb6t785', 'remove items', 'alternative_names', 'a|c'],
            ['', 'remove item', 'alternative_descriptions', 'old'],
          ]),
        ),
      });
      const [change] = changesOf(sheet.rows, recordsById(docs));
      expect(change!.doc_after.alternative_names).toEqual(['b']);
      expect(change!.doc_after).not.toHaveProperty('alternative_descriptions');
      expect(change!.update_info).toEqual({ n: 2, nModified: 1, ok: 1 });
    });

    it('update replaces the whole list; one value is a list of one', () => {
      const after = apply(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'websites', 'https://example.org/only'],
          ['', 'replace items', 'funding_sources', 'A | B'],
        ]),
      )['nmdc:sty-11-8fb6t785']!;
      expect(after.websites).toEqual(['https://example.org/only']);
      expect(after.funding_sources).toEqual(['A', 'B']);
    });
  });

  describe('nested objects', () => {
    it('a dotted update creates the objects on the way; a dotted remove drops one part', () => {
      const after = apply(
        tsv([
          ['nmdc:bsm-11-x5xj6p33', 'update', 'depth.has_numeric_value', '0.5'],
          ['', '', 'depth.has_unit', 'm'],
          ['', '', 'env_medium.term.name', 'soil'],
          ['nmdc:sty-11-8fb6t785', 'remove', 'principal_investigator.has_raw_value', ''],
        ]),
      );
      expect(after['nmdc:bsm-11-x5xj6p33']!.depth).toEqual({ has_numeric_value: 0.5, has_unit: 'm' });
      expect(after['nmdc:bsm-11-x5xj6p33']!.env_medium).toEqual({
        type: 'nmdc:ControlledIdentifiedTermValue',
        term: { id: 'ENVO:00001998', type: 'nmdc:OntologyClass', name: 'soil' },
      });
      expect(after['nmdc:sty-11-8fb6t785']!.principal_investigator).toEqual({
        type: 'nmdc:PersonValue',
        name: 'Old PI',
      });
    });

    it('a variable replaces a whole object with update, and its rows need no action', () => {
      const after = apply(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'principal_investigator', 'pi'],
          ['pi', '', 'name', 'Ada Lovelace'],
          ['pi', '', 'type', 'nmdc:PersonValue'],
          ['pi', 'insert', 'websites', 'https://example.org/ada'],
          ['', 'update', 'name', 'after the variable'],
        ]),
      )['nmdc:sty-11-8fb6t785']!;
      expect(after.principal_investigator).toEqual({
        name: 'Ada Lovelace',
        type: 'nmdc:PersonValue',
        websites: ['https://example.org/ada'],
      });
      expect(after.name).toBe('after the variable');
    });

    it('variables may hold variables, be placed after their rows, and repeat a list slot to add items', () => {
      const after = apply(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'insert', 'has_credit_associations', 'ca'],
          ['ca', '', 'applied_roles', 'Investigation'],
          ['ca', '', 'applied_roles', 'Supervision|Investigation'],
          ['person', '', 'name', 'Grace Hopper'],
          ['person', '', 'orcid', 'orcid:0000-0002-1825-0097'],
          ['ca', '', 'applies_to_person', 'person'],
          ['ca', '', 'type', 'prov:Association'],
        ]),
      )['nmdc:sty-11-8fb6t785']!;
      expect(after.has_credit_associations).toEqual([
        {
          applied_roles: ['Investigation', 'Supervision', 'Investigation'],
          applies_to_person: { name: 'Grace Hopper', orcid: 'orcid:0000-0002-1825-0097' },
          type: 'prov:Association',
        },
      ]);
    });

    it('a variable takes the type of its own type row for its other rows (QuantityValue for an AttributeValue slot)', () => {
      const after = apply(
        tsv([
          ['nmdc:bsm-11-x5xj6p33', 'update', 'temp', 't'],
          ['t', '', 'type', 'nmdc:QuantityValue'],
          ['t', '', 'has_numeric_value', '12'],
          ['t', '', 'has_unit', 'Cel'],
        ]),
      )['nmdc:bsm-11-x5xj6p33']!;
      expect(after.temp).toEqual({ type: 'nmdc:QuantityValue', has_numeric_value: 12, has_unit: 'Cel' });
    });

    it('the same variable name means different objects under different records', () => {
      const after = apply(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'principal_investigator', 'v'],
          ['v', '', 'name', 'Study PI'],
          ['nmdc:bsm-11-x5xj6p33', 'update', 'depth', 'v'],
          ['v', '', 'has_numeric_value', '2'],
        ]),
      );
      expect(after['nmdc:sty-11-8fb6t785']!.principal_investigator).toEqual({ name: 'Study PI' });
      expect(after['nmdc:bsm-11-x5xj6p33']!.depth).toEqual({ has_numeric_value: 2 });
    });

    it('remove items with a variable takes out an equal object whatever its key order', () => {
      const credit = {
        type: 'prov:Association',
        applied_roles: ['Investigation'],
        applies_to_person: { type: 'nmdc:PersonValue', name: 'Grace Hopper' },
      };
      const docs = { study_set: [{ ...STUDY, has_credit_associations: [credit] }] };
      const after = apply(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'remove items', 'has_credit_associations', 'c'],
          ['c', '', 'applies_to_person.name', 'Grace Hopper'],
          ['c', '', 'applies_to_person.type', 'nmdc:PersonValue'],
          ['c', '', 'applied_roles', 'Investigation'],
          ['c', '', 'type', 'prov:Association'],
        ]),
        'x.tsv',
        docs,
      );
      expect(after['nmdc:sty-11-8fb6t785']!.has_credit_associations).toEqual([]);
    });
  });
});

describe('refusing a bad changesheet (400, naming line and column)', () => {
  it('an unknown action, with the vocabulary', () => {
    expect(refusal(tsv([['nmdc:sty-11-8fb6t785', 'append', 'name', 'x']]))).toBe(
      "line 2, column action: unknown action 'append' (the actions are 'insert', 'insert items', 'insert item', " +
        "'remove items', 'remove item', 'update', 'set', 'replace', 'replace items', 'remove', 'delete')",
    );
  });

  it('action names that are properties of every object are not actions', () => {
    expect(refusal(tsv([['nmdc:sty-11-8fb6t785', 'constructor', 'name', 'x']]))).toMatch(
      /^line 2, column action: unknown action 'constructor'/,
    );
  });

  it('an id no record has, named once', () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'name', 'x'],
          ['nmdc:sty-11-00000000', 'update', 'name', 'x'],
          ['nmdc:sty-11-00000000', 'update', 'name', 'y'],
        ]),
      ),
    ).toBe("line 3, column id: no record has the id 'nmdc:sty-11-00000000'");
  });

  it('attributes the schema does not have, every one listed', () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'colour', 'red'],
          ['', '', 'principal_investigator.shoe_size', '9'],
          ['', '', 'name.first', 'A'],
          ['', '', 'has_credit_associations.applied_roles', 'Investigation'],
          ['', '', 'principal_investigator..name', 'A'],
        ]),
      ),
    ).toBe(
      [
        "line 2, column attribute: 'colour' is not a slot of Study",
        "line 3, column attribute: 'shoe_size' is not a slot of PersonValue",
        "line 4, column attribute: 'name' holds a string value, which has no 'first'",
        "line 5, column attribute: 'has_credit_associations' holds a list (name its items with a variable, not a dotted path)",
        "line 6, column attribute: 'principal_investigator..name' has an empty part",
      ].join('; '),
    );
  });

  it("a change of a record's id, and list actions on single values", () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'id', 'nmdc:sty-11-zzzzzzzz'],
          ['', 'insert', 'name', 'x'],
          ['', 'remove items', 'description', 'x'],
        ]),
      ),
    ).toBe(
      [
        "line 2, column attribute: a record's id cannot be changed by a changesheet",
        "line 3, column action: 'insert' changes the items of a list, but 'name' of Study holds one value (use 'update')",
        "line 4, column action: 'remove items' changes the items of a list, but 'description' of Study holds one value (use 'update')",
      ].join('; '),
    );
  });

  it("a line with more than 10,000 separators, counted by the file's lines (quoted line breaks too)", () => {
    const csv =
      'id,action,attribute,value\n' +
      'nmdc:sty-11-8fb6t785,update,description,"two\nlines, with a comma"\n' +
      `nmdc:sty-11-8fb6t785,update,name,"${','.repeat(9_997)}"\n` +
      `,${','.repeat(10_000)}\n`;
    expect(refusal(csv, 'fix.csv')).toBe(
      "line 5: the line has more than 10000 separators (','); a changesheet row has the columns id, action, attribute and value",
    );
    // 10,000 on a line are read (three between cells, the rest inside a quoted value).
    const withoutLastLine = csv.slice(0, csv.lastIndexOf('\n', csv.length - 2) + 1);
    expect(apply(withoutLastLine, 'fix.csv')['nmdc:sty-11-8fb6t785']!.name).toBe(','.repeat(9_997));
  });

  it('rows with more fields than the header', () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'name', 'x'],
          ['', 'update', 'name', 'x', 'extra'],
        ]),
      ),
    ).toBe('line 3: the row has 5 fields, the header 4');
  });

  it('rows before any record id, rows without an action or attribute', () => {
    expect(
      refusal(
        tsv([
          ['', '', 'name', 'x'],
          ['v1', 'update', 'name', 'x'],
          ['nmdc:sty-11-8fb6t785', 'update', '', 'x'],
        ]),
      ),
    ).toBe(
      [
        'line 2, column action: the row has no action and there is no row before it to take one from',
        'line 2, column id: the first row must name a record id (rows without an id continue the previous record)',
        "line 3, column id: 'v1' is a variable (it has no colon), but no record id comes before it",
        'line 4, column attribute: the attribute is empty',
      ].join('; '),
    );
  });

  it('variables that are never placed, placed twice, or hold themselves', () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'principal_investigator', 'a'],
          ['', 'update', 'has_credit_associations', 'a'],
          ['a', '', 'name', 'x'],
          ['b', '', 'name', 'y'],
          ['c', '', 'applies_to_person', 'c'],
          ['', 'update', 'name', 'plain'],
        ]),
      ),
    ).toBe(
      [
        "line 3, column value: the variable 'a' already stands for 'principal_investigator' (line 2), give each object its own variable",
        "line 5, column id: the variable 'b' is not the value of any row of nmdc:sty-11-8fb6t785 (a row such as 'nmdc:sty-11-8fb6t785  update  <attribute>  b' says where its object goes)",
        "line 6, column id: the variable 'c' holds itself (through the rows that place it)",
      ].join('; '),
    );
  });

  it('a variable for a slot that holds plain values', () => {
    expect(
      refusal(
        tsv([
          ['nmdc:sty-11-8fb6t785', 'update', 'name', 'n'],
          ['n', '', 'name', 'x'],
        ]),
      ),
    ).toBe(
      "line 2, column value: 'n' is a variable, which stands for an object, but 'name' holds string values",
    );
  });

  it('an update the record cannot take (the record holds a text where the schema has a list)', () => {
    const docs = {
      study_set: [{ ...STUDY, websites: 'https://example.org/not-a-list' as unknown as string[] }],
    };
    const sheet = readSheet({
      filename: 's.tsv',
      content: Buffer.from(tsv([['nmdc:sty-11-8fb6t785', 'insert', 'websites', 'https://example.org/b']])),
    });
    expect(() => changesOf(sheet.rows, recordsById(docs))).toThrow(
      expect.objectContaining({
        kind: 'invalid-input',
        detail:
          'line 2, column attribute: nmdc:sty-11-8fb6t785: \'websites\' holds the string "https://example.org/not-a-list", not a list, so items cannot be added to it',
      }),
    );
  });

  it('sheets that cannot be read: missing columns, no rows, an unclosed quote, bytes that are not UTF-8', () => {
    expect(refusal('id\taction\tvalue\nnmdc:x\tupdate\tx\n')).toBe(
      "line 1: the changesheet lacks the column 'attribute' (the header must name id, action, attribute and value, and names 'id', 'action', 'value')",
    );
    expect(refusal('id\taction\tattribute\tvalue\n\n')).toBe('the changesheet has no rows after its header');
    expect(refusal('')).toBe(
      'the changesheet is empty: it needs a header line with the columns id, action, attribute, value',
    );
    expect(refusal('id,action,attribute,value\nnmdc:sty-11-8fb6t785,update,name,"open\n', 'f.csv')).toMatch(
      /^line 2: the file cannot be read as CSV: Quote Not Closed/,
    );
    try {
      readSheet({ filename: 'f.tsv', content: Buffer.from([0x69, 0x64, 0xff, 0x0a]) });
      expect.unreachable();
    } catch (err) {
      expect((err as DomainError).detail).toBe('file f.tsv is not UTF-8 text');
    }
  });

  it('lists at most 25 problems and counts the rest', () => {
    const rows = Array.from({ length: 30 }, () => ['nmdc:sty-11-8fb6t785', 'frobnicate', 'name', 'x']);
    const detail = refusal(tsv(rows));
    expect(detail.split('; line ')).toHaveLength(25);
    expect(detail.endsWith('; and 5 more')).toBe(true);
  });
});

describe('update operators against a model', () => {
  const item = fc.constantFrom('a', 'b', 'c', 'd');

  it('a sequence of inserts and removals leaves the list a set model predicts, in first-insert order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.constantFrom('insert', 'remove items'), fc.array(item, { minLength: 1, maxLength: 3 })),
        ),
        (steps) => {
          const rows = steps.map(([action, items], i) => [
            i === 0 ? 'nmdc:sty-11-8fb6t785' : '',
            action,
            'alternative_names',
            items.join('|'),
          ]);
          if (rows.length === 0) return;
          let model: string[] = [];
          for (const [action, items] of steps) {
            if (action === 'insert') for (const x of items) if (!model.includes(x)) model.push(x);
            if (action === 'remove items') model = model.filter((x) => !(items as string[]).includes(x));
          }
          const after = apply(tsv(rows))['nmdc:sty-11-8fb6t785']!;
          expect(after.alternative_names ?? []).toEqual(model);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the last update or remove of a value wins', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.constant<[string, string]>(['remove', '']),
            fc.tuple(fc.constant('update'), fc.stringMatching(/^[a-z]{1,6}$/)),
          ),
          {
            minLength: 1,
          },
        ),
        (steps) => {
          const rows = steps.map(([action, value], i) => [
            i === 0 ? 'nmdc:sty-11-8fb6t785' : '',
            action,
            'description',
            value,
          ]);
          const after = apply(tsv(rows))['nmdc:sty-11-8fb6t785']!;
          const [lastAction, lastValue] = steps[steps.length - 1]!;
          if (lastAction === 'remove') expect(after).not.toHaveProperty('description');
          else expect(after.description).toBe(lastValue);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('$set through a text value is a conflict; $unset through an absent object is not', () => {
    expect(() => applyStatement({ id: 'x', a: 'text' }, { $set: { 'a.b': 1 } })).toThrow(UpdateConflict);
    const doc = { id: 'x' };
    expect(applyStatement(doc, { $unset: { 'a.b': '' } })).toBe(false);
    expect(doc).toEqual({ id: 'x' });
  });
});
