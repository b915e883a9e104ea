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
  for (const cell of cells) n += cell.split('\n').length - 1;
  return n;
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
  return { name, contentType, separator, text: text.replace(/\r\n?/g, '\n') };
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
  return sheetOf(name, contentType, text, records);
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
  const records: ParsedRecord[] = [];
  let failure: unknown;
  parser.on('readable', () => {
    for (let r = parser.read(); r !== null; r = parser.read()) records.push(r as ParsedRecord);
  });
  const ended = new Promise<void>((resolve) => {
    parser.on('end', resolve);
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
  return sheetOf(name, contentType, text, records);
}

function sheetOf(name: string, contentType: string, text: string, records: ParsedRecord[]): Sheet {
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
