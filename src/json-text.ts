/**
 * A value carried as its JSON text: an aggregation's result records come from their pipeline
 * process as text, and are answered and kept as that text, never parsed or serialised again in
 * the service's process (a batch of 35 MB of results, written twice in a cursor answer, held the
 * event loop 140 ms in one `JSON.stringify`; one result record may be 16 MiB).
 *
 * `JSON.stringify` of a value holding one writes what `JSON.parse(text)` gives (`toJSON`), so a
 * caller unaware of it still answers the right JSON, paying for a parse.
 */
export class JsonText {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** `JSON.stringify(value)`, a JsonText's text taken as it is (its `toJSON` would parse it). */
export function jsonTextOf(value: object): string;
export function jsonTextOf(value: unknown): string | undefined;
export function jsonTextOf(value: unknown): string | undefined {
  return value instanceof JsonText ? value.text : JSON.stringify(value);
}

/**
 * A stored record carried as its stored text, with its id: the embedded store keeps every record
 * as exactly its `JSON.stringify`, so a page answered whole is read and written without parsing
 * (`FindOptions.asText`).
 */
export class RecordText extends JsonText {
  constructor(
    readonly id: string,
    text: string,
  ) {
    super(text);
  }
}

/** A record read whole, parsed when it came as its stored text. */
export function parsedRecord<D extends object>(record: D | RecordText): D {
  return record instanceof RecordText ? (JSON.parse(record.text) as D) : record;
}
