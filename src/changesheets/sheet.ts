/**
 * Reading an uploaded changesheet: its format (TSV or CSV, from the file name's extension, else the
 * part's content type, as the original decides), its UTF-8 text, and its rows with the columns
 * `id`, `action`, `attribute` and `value` (other columns, e.g. a `comment`, are ignored), each row
 * with the line of the file it starts on so problems can name it.
 */
import { parse } from 'csv-parse/sync';
import { CsvError, parse as parseInChunks } from 'csv-parse';
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
  for (const cell of cells) for (let at = cell.indexOf('\n'); at !== -1; at = cell.indexOf('\n', at + 1)) n++;
  return n;
}

/**
 * Most separators a line of a sheet may have. A changesheet row has four columns and perhaps a
 * comment; a line of 900,000 tabs (1 MiB) made the parser build one record of 900,001 fields in
 * one step, holding the event loop for 130-160 ms. Separators inside quoted values count too.
 */
export const MAX_LINE_SEPARATORS = 10_000;

/** A 400 naming the first line with more than MAX_LINE_SEPARATORS separators, if any. */
function refuseWideLines(text: string, separator: string): void {
  let line = 1;
  let count = 0;
  let lineEnd = text.indexOf('\n');
  for (let at = text.indexOf(separator); at !== -1; at = text.indexOf(separator, at + 1)) {
    // Lines passed since the last separator.
    while (lineEnd !== -1 && lineEnd < at) {
      line++;
      count = 0;
      lineEnd = text.indexOf('\n', lineEnd + 1);
    }
    if (++count > MAX_LINE_SEPARATORS)
      ChangesheetProblems.fail(
        `line ${line}: the line has more than ${MAX_LINE_SEPARATORS} separators ` +
          `('${separator === '\t' ? '\\t' : separator}'); a changesheet row has the columns id, action, attribute and value`,
      );
  }
}

type ParsedRecord = { record: string[]; info: { lines: number } };

/** The sheet's format and UTF-8 text; a 400 when it is neither TSV nor CSV, or not UTF-8. */
function decodeSheet(upload: SheetUpload): {
  name: string;
  contentType: string;
  separator: string;
  text: string;
} {
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
  // One line end everywhere (the parser counts a CRLF inside quotes as two lines otherwise).
  text = text.replace(/\r\n?/g, '\n');
  refuseWideLines(text, separator);
  return { name, contentType, separator, text };
}

const parserOptions = (separator: string) => ({
  delimiter: separator,
  record_delimiter: '\n',
  bom: true,
  info: true,
  relax_quotes: true,
  relax_column_count: true,
  skip_empty_lines: true,
});

/** A parser error as a 400 naming the line; anything else is rethrown. */
function unreadable(err: unknown, contentType: string): never {
  if (err instanceof CsvError) {
    const line = (err as CsvError & { lines?: number }).lines;
    ChangesheetProblems.fail(
      `${line ? `line ${line}: ` : ''}the file cannot be read as ${contentType === TSV ? 'TSV' : 'CSV'}: ${err.message}`,
    );
  }
  throw err;
}

/** Reads the upload into rows; a sheet that cannot be read is a 400 naming the line and the problem. */
export function readSheet(upload: SheetUpload): Sheet {
  const { name, contentType, separator, text } = decodeSheet(upload);
  let records: ParsedRecord[];
  try {
    records = parse(text, parserOptions(separator)) as unknown as ParsedRecord[];
  } catch (err) {
    unreadable(err, contentType);
  }
  const rows = new SheetRows();
  for (const record of records) rows.add(record);
  return rows.sheet(name, contentType, text);
}

/** Text the parser reads between two turns of the event loop (a few milliseconds of work). */
const CHUNK_CHARS = 8 * 1024;

/**
 * `readSheet` for the server: the text is parsed a chunk at a time, giving other requests a turn
 * between chunks, so a sheet of MAX_BODY_BYTES never holds the event loop for long.
 */
export async function readSheetInTurns(upload: SheetUpload): Promise<Sheet> {
  const { name, contentType, separator, text } = decodeSheet(upload);
  const parser = parseInChunks(parserOptions(separator));
  const rows = new SheetRows();
  let failure: unknown;
  parser.on('readable', () => {
    try {
      for (let r = parser.read(); r !== null; r = parser.read()) rows.add(r as ParsedRecord);
    } catch (err) {
      // A header without the required columns: refused at once, the rest unread.
      failure ??= err;
      parser.destroy();
    }
  });
  const ended = new Promise<void>((resolve) => {
    parser.on('end', resolve);
    parser.on('close', resolve);
    parser.on('error', (err) => {
      failure ??= err;
      resolve();
    });
  });
  for (let at = 0; at < text.length && failure === undefined;) {
    let end = Math.min(text.length, at + CHUNK_CHARS);
    // Never between the two halves of a surrogate pair.
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    parser.write(text.slice(at, end));
    at = end;
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (failure === undefined) parser.end();
  await ended;
  if (failure !== undefined) unreadable(failure, contentType);
  return rows.sheet(name, contentType, text);
}

/** Rows made of the parser's records as they come: the header first, then each row checked. */
class SheetRows {
  private columns: string[] | undefined;
  private at: Record<Column, number> | undefined;
  private readonly problems = new ChangesheetProblems();
  readonly rows: SheetRow[] = [];

  add({ record, info }: ParsedRecord): void {
    if (!this.columns) return this.header(record);
    const line = info.lines - lineBreaksIn(record);
    if (record.every((cell) => cell.trim() === '')) return;
    if (record.length > this.columns.length) {
      this.problems.add(
        line,
        undefined,
        `the row has ${record.length} fields, the header ${this.columns.length}`,
      );
      return;
    }
    const cell = (c: Column) => (record[this.at![c]] ?? '').trim();
    this.rows.push({
      line,
      id: cell('id'),
      action: cell('action'),
      attribute: cell('attribute'),
      value: cell('value'),
    });
  }

  private header(record: string[]): void {
    const columns = (this.columns = record.map((c) => c.trim()));
    const missing = REQUIRED_COLUMNS.filter((c) => !columns.includes(c));
    if (missing.length > 0) {
      ChangesheetProblems.fail(
        `line 1: the changesheet lacks the column${missing.length > 1 ? 's' : ''} ${missing.map((c) => `'${c}'`).join(', ')} ` +
          `(the header must name id, action, attribute and value, and names ${columns.map((c) => `'${c}'`).join(', ')})`,
      );
    }
    this.at = Object.fromEntries(REQUIRED_COLUMNS.map((c) => [c, columns.indexOf(c)])) as Record<
      Column,
      number
    >;
  }

  sheet(name: string, contentType: string, text: string): Sheet {
    if (!this.columns)
      ChangesheetProblems.fail(
        'the changesheet is empty: it needs a header line with the columns id, action, attribute, value',
      );
    this.problems.throwIfAny();
    if (this.rows.length === 0) ChangesheetProblems.fail('the changesheet has no rows after its header');
    return { name, contentType: contentType as Sheet['contentType'], text, rows: this.rows };
  }
}
