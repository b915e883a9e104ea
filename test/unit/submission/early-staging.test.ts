/**
 * StreamedWrites: a submission body's records, as its reader tells them, handed over as writes of
 * one collection each (a batch at most) while the body is read, and compared with the payload at
 * the end by identity.
 */
import { describe, expect, it } from 'vitest';
import { StreamedWrites, type StreamedWrite } from '../../../src/submission/early-staging.ts';

const records = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}:${i}` }));

/** The writes of `streamed` as they come, until it ends (or the error it fails with). */
async function drain(streamed: StreamedWrites): Promise<StreamedWrite[] | Error> {
  const out: StreamedWrite[] = [];
  try {
    for await (const write of streamed) out.push(write);
    return out;
  } catch (err) {
    return err as Error;
  }
}

describe('StreamedWrites', () => {
  it('hands over writes of at most a batch of one collection, in body order, as the elements come', async () => {
    const streamed = new StreamedWrites(3);
    const a = records(7, 'a');
    const b = records(2, 'b');
    const seen: StreamedWrite[] = [];
    const draining = (async () => {
      for await (const write of streamed) seen.push(write);
    })();
    streamed.elements('study_set', a.slice(0, 4), 0);
    await new Promise((resolve) => setImmediate(resolve));
    // A whole batch is handed over before the body ends; the rest waits for more.
    expect(seen.map((w) => w.docs.length)).toEqual([3]);
    streamed.elements('study_set', a.slice(4), 0);
    streamed.elements('biosample_set', b, 1);
    streamed.received();
    streamed.end();
    await draining;
    expect(seen.map((w) => [w.collection, w.docs.map((d) => d.id)])).toEqual([
      ['study_set', ['a:0', 'a:1', 'a:2']],
      ['study_set', ['a:3', 'a:4', 'a:5']],
      ['study_set', ['a:6']],
      ['biosample_set', ['b:0', 'b:1']],
    ]);
    expect(seen[0]!.docs[0]).toBe(a[0]);
  });

  it('matches only the payload it was told: the same records, collections and order', () => {
    const a = records(4, 'a');
    const b = records(2, 'b');
    const streamed = new StreamedWrites(2000);
    streamed.elements('study_set', a.slice(0, 2), 0);
    streamed.elements('study_set', a.slice(2), 0);
    streamed.elements('biosample_set', b, 1);
    // Not before the body is all parsed.
    expect(
      streamed.matches([
        { collection: 'study_set', records: a },
        { collection: 'biosample_set', records: b },
      ]),
    ).toBe(false);
    streamed.end();
    expect(
      streamed.matches([
        { collection: 'study_set', records: a },
        { collection: 'biosample_set', records: b },
      ]),
    ).toBe(true);
    // Equal records that are not the ones told, another order, one missing or one more: no.
    const copies = a.map((r) => ({ ...r }));
    expect(
      streamed.matches([
        { collection: 'study_set', records: copies },
        { collection: 'biosample_set', records: b },
      ]),
    ).toBe(false);
    expect(
      streamed.matches([
        { collection: 'biosample_set', records: b },
        { collection: 'study_set', records: a },
      ]),
    ).toBe(false);
    expect(streamed.matches([{ collection: 'study_set', records: a }])).toBe(false);
    expect(
      streamed.matches([
        { collection: 'study_set', records: a },
        { collection: 'biosample_set', records: [...b, { id: 'b:2' }] },
      ]),
    ).toBe(false);
  });

  it('keeps two arrays under one key apart, so a body holding a key twice matches neither payload', () => {
    const first = records(2, 'x');
    const second = records(1, 'y');
    const streamed = new StreamedWrites(2000);
    streamed.elements('study_set', first, 0);
    streamed.elements('study_set', second, 1);
    streamed.end();
    // JSON.parse keeps the last array of the key.
    expect(streamed.matches([{ collection: 'study_set', records: second }])).toBe(false);
    expect(streamed.matches([{ collection: 'study_set', records: [...first, ...second] }])).toBe(false);
  });

  it('fails its writes and says so once when the body is refused, a top-level array included', async () => {
    let failures = 0;
    const streamed = new StreamedWrites(2, () => failures++);
    const waiting = streamed.allReceived();
    const draining = drain(streamed);
    streamed.elements('study_set', records(5, 'a'), 0);
    streamed.abandon();
    streamed.abandon();
    const result = await draining;
    expect(result).toBeInstanceOf(Error);
    expect((result as Error).message).toMatch(/refused or its reading given up/);
    expect(failures).toBe(1);
    // Whoever waited for the last byte goes on (to find the writes failed).
    await waiting;
    streamed.end();
    expect(streamed.matches([{ collection: 'study_set', records: [] }])).toBe(false);

    let arrays = 0;
    const top = new StreamedWrites(2, () => arrays++);
    top.elements(undefined, records(1, 't'), 0);
    expect(arrays).toBe(1);
    expect(await drain(top)).toBeInstanceOf(Error);
  });

  it('says when the last byte is in, to whoever asks before or after', async () => {
    const streamed = new StreamedWrites(2);
    let before = false;
    void streamed.allReceived().then(() => (before = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(before).toBe(false);
    streamed.received();
    await new Promise((resolve) => setImmediate(resolve));
    expect(before).toBe(true);
    await streamed.allReceived();
  });
});
