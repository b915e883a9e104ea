/**
 * Reading an uploaded changesheet: its format (TSV or CSV, from the file name's extension, else the
 * part's content type, as the original decides), its UTF-8 text, and its rows with the columns
 * `id`, `action`, `attribute` and `value` (other columns, e.g. a `comment`, are ignored), each row
 * with the line of the file it starts on so problems can name it.
 */
import { parse } from 'csv-parse/sync';
import { CsvError } from 'csv-parse';
import { ChangesheetProblems } from './problems.ts';

export const TSV = 'text/tab-separated-values';
export const CSV = 'text/csv';
const SEPARATORS: Record<string, string> = { [CSV]: ',', [TSV]: '\t' };

export const REQUIRED_COLUMNS = ['id', 'action', 'attribute', 'value'] as const;
export type Column = (typeof REQUIRED_COLUMNS)[number];

export interface SheetUpload {
  /** The file name the client gave (may be absent). */
  filename?: string;
  /** The part's content type. */
  contentType?: string;
  content: Buffer;
}

/** One row of the sheet, its cells trimmed; `line` is the line of the file the row starts on. */
export interface SheetRow {
  line: number;
  id: string;
  action: string;
  attribute: string;
  value: string;
}

export interface Sheet {
  name: string;
  contentType: typeof CSV | typeof TSV;
  text: string;
  rows: SheetRow[];
}

/** The sheet's content type: the extension decides, else the part's content type (without parameters). */
export function contentTypeOf(upload: Pick<SheetUpload, 'filename' | 'contentType'>): string {
  const name = (upload.filename ?? '').toLowerCase();
  if (name.endsWith('.csv')) return CSV;
  if (name.endsWith('.tsv')) return TSV;
  return (upload.contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

function lineBreaksIn(cells: string[]): number {
  let n = 0;
  for (const cell of cells) n += cell.split('\n').length - 1;
  return n;
}

/** Reads the upload into rows; a sheet that cannot be read is a 400 naming the line and the problem. */
export function readSheet(upload: SheetUpload): Sheet {
  const name = upload.filename ?? '';
  const contentType = contentTypeOf(upload);
  const separator = SEPARATORS[contentType];
  if (separator === undefined) {
    ChangesheetProblems.fail(
      `file ${name || '(without a name)'} has content type '${upload.contentType ?? ''}'. ` +
        `Only ['${CSV}', '${TSV}'] files are permitted.`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(upload.content);
  } catch {
    ChangesheetProblems.fail(`file ${name || '(without a name)'} is not UTF-8 text`);
  }

  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    // One line end everywhere (the parser counts a CRLF inside quotes as two lines otherwise).
    records = parse(text.replace(/\r\n?/g, '\n'), {
      delimiter: separator,
      record_delimiter: '\n',
      bom: true,
      info: true,
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  } catch (err) {
    if (err instanceof CsvError) {
      const line = (err as CsvError & { lines?: number }).lines;
      ChangesheetProblems.fail(
        `${line ? `line ${line}: ` : ''}the file cannot be read as ${contentType === TSV ? 'TSV' : 'CSV'}: ${err.message}`,
      );
    }
    throw err;
  }

  const [header, ...body] = records;
  if (!header)
    ChangesheetProblems.fail(
      'the changesheet is empty: it needs a header line with the columns id, action, attribute, value',
    );
  const columns = header.record.map((c) => c.trim());
  const missing = REQUIRED_COLUMNS.filter((c) => !columns.includes(c));
  if (missing.length > 0) {
    ChangesheetProblems.fail(
      `line 1: the changesheet lacks the column${missing.length > 1 ? 's' : ''} ${missing.map((c) => `'${c}'`).join(', ')} ` +
        `(the header must name id, action, attribute and value, and names ${columns.map((c) => `'${c}'`).join(', ')})`,
    );
  }
  const at = Object.fromEntries(REQUIRED_COLUMNS.map((c) => [c, columns.indexOf(c)])) as Record<
    Column,
    number
  >;

  const problems = new ChangesheetProblems();
  const rows: SheetRow[] = [];
  for (const { record, info } of body) {
    const line = info.lines - lineBreaksIn(record);
    if (record.every((cell) => cell.trim() === '')) continue;
    if (record.length > columns.length) {
      problems.add(line, undefined, `the row has ${record.length} fields, the header ${columns.length}`);
      continue;
    }
    const cell = (c: Column) => (record[at[c]] ?? '').trim();
    rows.push({
      line,
      id: cell('id'),
      action: cell('action'),
      attribute: cell('attribute'),
      value: cell('value'),
    });
  }
  problems.throwIfAny();
  if (rows.length === 0) ChangesheetProblems.fail('the changesheet has no rows after its header');
  return { name, contentType: contentType as Sheet['contentType'], text, rows };
}
