/**
 * Problems found in a changesheet, each naming the line of the file, the column and what is wrong,
 * gathered so one answer lists them all (up to a bound) instead of one per attempt.
 */
import { BadRequest } from '../errors.ts';

/** At most this many problems are listed; the rest are counted. */
const LISTED = 25;
/**
 * A problem is told in at most this many characters: its message quotes what the file holds (a
 * header line, an id, a value), which may be most of a megabyte.
 */
export const MESSAGE_CHARS = 1000;

/** `message`, cut to MESSAGE_CHARS with a note of its full length. */
function bounded(message: string): string {
  if (message.length <= MESSAGE_CHARS) return message;
  return `${message.slice(0, MESSAGE_CHARS)}… (${message.length.toLocaleString('en-US')} characters in all)`;
}

export class ChangesheetProblems {
  private readonly messages: string[] = [];

  /** A 400 with this message alone. */
  static fail(message: string): never {
    throw new BadRequest(bounded(message));
  }

  /** `line 4, column attribute: 'foo' is not a slot of Study` */
  static describe(line: number, column: string | undefined, message: string): string {
    return bounded(`line ${line}${column ? `, column ${column}` : ''}: ${message}`);
  }

  add(line: number, column: string | undefined, message: string): void {
    this.messages.push(ChangesheetProblems.describe(line, column, message));
  }

  get count(): number {
    return this.messages.length;
  }

  /** A 400 listing every problem found so far, if there is any. */
  throwIfAny(): void {
    if (this.messages.length === 0) return;
    const listed = this.messages.slice(0, LISTED);
    const more = this.messages.length - listed.length;
    throw new BadRequest(listed.join('; ') + (more > 0 ? `; and ${more} more` : ''));
  }
}
