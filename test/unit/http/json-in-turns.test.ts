import net from 'node:net';
/**
 * Large JSON bodies parsed in turns (src/http/request-reading/json-in-turns.ts) answer exactly what
 * `JSON.parse` of the whole text answers, refuse what it refuses, and take turns of the event loop
 * while they are read; the middleware answers as express.json does.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonTooDeep } from '../../../src/errors.ts';
import { errorHandler } from '../../../src/http/error-handler.ts';
import type { JsonObserver } from '../../../src/json-stream.ts';
import { jsonBodies, JsonReader, parseJsonInTurns } from '../../../src/http/request-reading/json-in-turns.ts';
import { gaveWay, nextTurn, requestCame } from '../../../src/turns.ts';

/** What JSON.parse answers for `text` (an empty body is {}), or 'refused'. */
function whole(text: string): unknown {
  if (text.replace(/^\uFEFF/, '') === '') return {};
  try {
    return JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
  } catch {
    return 'refused';
  }
}

async function inTurns(text: string): Promise<unknown> {
  try {
    return await parseJsonInTurns(Buffer.from(text, 'utf8'));
  } catch (err) {
    if (err instanceof JsonTooDeep) throw err;
    expect((err as { type?: string }).type).toBe('entity.parse.failed');
    return 'refused';
  }
}

const VALID = [
  '{}',
  '[]',
  ' [ ] ',
  '{"biosample_set": []}',
  '{"biosample_set": [ ]}',
  '{"@type": "Database", "biosample_set": [{"id": "a", "x": [1, [2, {"y": "]"}]]}, {"id": "b"}], "study_set": [1,2]}',
  '[{"a": 1}, "x", 3, null, true, [[]], {"b": ["\\"]"]}]',
  '{"a": [1, 2], "a": 5}',
  '{"a": 5, "a": [1, 2]}',
  '{"a": [1], "b": {"c": [1, 2]}, "a": [3, 4]}',
  '{"__proto__": [1, 2], "constructor": [3]}',
  '{"k\\"ey": ["v,al", "\\\\"], "\\u0061": [1]}',
  '\uFEFF{"bom": [1]}',
  '{"é": ["ü", "\u2028", "😀"]}',
  '[1e3, -0, 0.5, "\\ud800"]',
];

const INVALID = [
  '{',
  '[',
  '[1,]',
  '[,1]',
  '[1,,2]',
  '{"a": [1,]}',
  '{"a": [1 2]}',
  '{"a" [1, 2]}',
  '{"a": 1 [2, 3]}',
  '{"a": [1, 2] [3]}',
  '{"a": [1, 2]',
  '{"a": [1, 2]} x',
  '[1, 2] [3]',
  '{"a": ["unterminated]}',
  '"just a string"',
  '42',
  'nul',
  '{"a": [01]}',
  '{"a": [1], }',
  "{'a': [1]}",
];

describe('parseJsonInTurns', () => {
  it('answers what JSON.parse answers, own "__proto__" keys and duplicate keys included', async () => {
    for (const text of VALID) {
      const value = await inTurns(text);
      expect(value, text).toEqual(whole(text));
      expect(value).not.toBe('refused');
    }
    const proto = (await inTurns('{"__proto__": [1, 2]}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value).toEqual([1, 2]);
  });

  it('refuses what JSON.parse refuses, saying where', async () => {
    for (const text of INVALID) expect(await inTurns(text), text).toBe('refused');
    await expect(parseJsonInTurns(Buffer.from('{"a": [1, 2,]}'))).rejects.toThrow(/position 12/);
    await expect(parseJsonInTurns(Buffer.from('{"a": [1, {"b": x}]}'))).rejects.toThrow(
      /in bytes 7-18 of the body/,
    );
  });

  it('agrees with JSON.parse on generated values and on their texts cut short or altered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.dictionary(fc.string(), fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 })),
          fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 6 }),
        ),
        fc.nat(),
        fc.constantFrom('', ',', ']', '[', '"', '}', ' ', '\\'),
        async (value, at, insert) => {
          const text = JSON.stringify(value);
          expect(await inTurns(text)).toEqual(JSON.parse(text));
          const cut = text.slice(0, at % (text.length + 1));
          expect(await inTurns(cut)).toEqual(whole(cut));
          const i = at % (text.length + 1);
          const altered = text.slice(0, i) + insert + text.slice(i);
          const expected = whole(altered);
          // A body must be an object or an array; JSON.parse takes any value.
          const strict = typeof expected === 'object' && expected !== null ? expected : 'refused';
          expect(await inTurns(altered)).toEqual(strict);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('refuses a body nested deeper than 100 levels before parsing it', async () => {
    await expect(
      parseJsonInTurns(Buffer.from(`{"a": [${'['.repeat(120)}${']'.repeat(120)}]}`)),
    ).rejects.toBeInstanceOf(JsonTooDeep);
    expect(await inTurns(`{"a": [${'['.repeat(97)}${']'.repeat(97)}]}`)).not.toBe('refused');
  });

  it('takes turns of the event loop while it reads a large body', async () => {
    const records = Array.from({ length: 40_000 }, (_, i) => ({
      id: `nmdc:bsm-11-${i}`,
      name: `Soil core ${i} ${'x'.repeat(400)}`,
    }));
    const text = JSON.stringify({ '@type': 'Database', biosample_set: records });
    expect(text.length).toBeGreaterThan(16 * 1024 * 1024);
    let turns = 0;
    let done = false;
    const turning = (async () => {
      while (!done) {
        turns++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const value = await parseJsonInTurns(Buffer.from(text));
    done = true;
    await turning;
    expect(value).toEqual({ '@type': 'Database', biosample_set: records });
    // A scan slice per 2 MiB and a parse group per MiB at least.
    expect(turns).toBeGreaterThan(16);
  });
});

describe('JsonReader', () => {
  /** The value read from `text`'s bytes given in pieces of the sizes `cuts` cycles through, or how it is refused. */
  async function inPieces(text: string, cuts: number[]): Promise<unknown> {
    const bytes = Buffer.from(text, 'utf8');
    const reader = new JsonReader();
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const size = Math.max(1, cuts[i % cuts.length]!);
      reader.append(bytes.subarray(at, at + size));
      at += size;
      // A turn now and then, in which the reader scans and parses what came.
      if (i % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    try {
      return await reader.finish();
    } catch (err) {
      if (err instanceof JsonTooDeep) return 'too deep';
      expect((err as { type?: string }).type).toBe('entity.parse.failed');
      return 'refused';
    }
  }

  it('answers, whatever pieces the bytes come in, what reading them at once answers', async () => {
    for (const text of [...VALID, ...INVALID])
      for (const cuts of [[1], [2, 3], [7], [1, 64]])
        expect(await inPieces(text, cuts), `${text} in pieces of ${cuts.join(', ')}`).toEqual(
          await inTurns(text),
        );
    // Large and small pieces mixed (small ones are copied together), strings with escapes and
    // characters of several bytes cut anywhere.
    const big = JSON.stringify({
      biosample_set: Array.from({ length: 2000 }, (_, i) => ({
        id: `nmdc:bsm-11-${i}`,
        name: `"é\\${'ü😀'.repeat(i % 50)}\\"`,
      })),
    });
    expect(await inPieces(big, [5000, 3, 70_000, 1000, 4095, 4096])).toEqual(JSON.parse(big));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.dictionary(fc.string(), fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 })),
          fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 6 }),
        ),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.constantFrom('', ',', ']', '[', '"', '}', ' ', '\\', '\uFEFF'),
        async (value, cuts, at, insert) => {
          const text = JSON.stringify(value);
          expect(await inPieces(text, cuts)).toEqual(JSON.parse(text));
          const i = at % (text.length + 1);
          const altered = text.slice(0, i) + insert + text.slice(i);
          expect(await inPieces(altered, cuts)).toEqual(await inTurns(altered));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('parses the elements as their bytes come, and refuses as reading at once would: the scan first', async () => {
    const records = Array.from({ length: 20_000 }, (_, i) => ({
      id: `nmdc:bsm-11-${i}`,
      name: 'x'.repeat(400),
    }));
    const bytes = Buffer.from(JSON.stringify({ biosample_set: records, study_set: [] }));
    const reader = new JsonReader();
    for (let at = 0; at < bytes.length - 65_536; at += 65_536) {
      reader.append(bytes.subarray(at, at + 65_536));
      await new Promise((resolve) => setImmediate(resolve));
    }
    // All but the last megabyte's group or so, before the last piece came.
    expect(reader.elementsParsed).toBeGreaterThan(records.length - 3000);
    reader.append(bytes.subarray(Math.floor((bytes.length - 1) / 65_536) * 65_536));
    expect(await reader.finish()).toEqual({ biosample_set: records, study_set: [] });
    // An element that is no JSON, then one nested too deep: too deep, as at once.
    const refused = `{"a": [{"b": x}, ${'['.repeat(120)}${']'.repeat(120)}]}`;
    await expect(parseJsonInTurns(Buffer.from(refused))).rejects.toBeInstanceOf(JsonTooDeep);
    expect(await inPieces(refused, [3])).toBe('too deep');
  });
});

describe('JsonReader.observe', () => {
  /** What an observer hears, in order: each call with its arguments. */
  function recorder() {
    const heard: Array<[string, ...unknown[]]> = [];
    const observer: JsonObserver = {
      elements: (key, values, array) => heard.push(['elements', key, values.length, array, values]),
      received: () => heard.push(['received']),
      end: () => heard.push(['end']),
      abandon: () => heard.push(['abandon']),
    };
    return { heard, observer };
  }

  /** Gives `bytes` to `reader` in pieces of `size`, a turn after each. */
  async function feed(reader: JsonReader, bytes: Buffer, size: number): Promise<void> {
    for (let at = 0; at < bytes.length; at += size) {
      reader.append(bytes.subarray(at, at + size));
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  const records = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, name: 'y'.repeat(300) }));

  it("tells each array's elements as they are parsed, in body order: the very values of the body", async () => {
    const body = { biosample_set: records(6000, 'b'), '@type': 'Database', study_set: records(3, 's') };
    const bytes = Buffer.from(JSON.stringify(body));
    const reader = new JsonReader();
    const { heard, observer } = recorder();
    reader.observe(observer);
    await feed(reader, bytes, 65_536);
    // Most of the elements were told before the last byte was said to be in.
    const told = heard.filter((h) => h[0] === 'elements');
    expect(told.length).toBeGreaterThan(1);
    expect(heard.some((h) => h[0] === 'received')).toBe(false);
    const value = (await reader.finish()) as typeof body;
    expect(value).toEqual(body);
    const kinds = heard.map((h) => h[0]);
    expect(kinds.filter((k) => k === 'received')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('end');
    const byKey = new Map<string, unknown[]>();
    for (const [, key, , array, values] of heard.filter((h) => h[0] === 'elements')) {
      expect(array).toBe(key === 'biosample_set' ? 0 : 1);
      byKey.set(key as string, [...(byKey.get(key as string) ?? []), ...(values as unknown[])]);
    }
    expect([...byKey.keys()]).toEqual(['biosample_set', 'study_set']);
    // The same objects the value holds, in its order.
    expect(byKey.get('biosample_set')!.every((v, i) => v === value.biosample_set[i])).toBe(true);
    expect(byKey.get('study_set')!.every((v, i) => v === value.study_set[i])).toBe(true);
  });

  it('tells a late observer what was parsed before it came, then the rest', async () => {
    const body = { a: records(4000, 'a') };
    const bytes = Buffer.from(JSON.stringify(body));
    const reader = new JsonReader();
    await feed(reader, bytes.subarray(0, bytes.length - 1000), 100_000);
    const { heard, observer } = recorder();
    reader.observe(observer);
    expect(heard[0]?.[0]).toBe('elements');
    reader.append(bytes.subarray(bytes.length - 1000));
    const value = (await reader.finish()) as typeof body;
    const values = heard.filter((h) => h[0] === 'elements').flatMap((h) => h[4] as unknown[]);
    expect(values).toHaveLength(4000);
    expect(values.every((v, i) => v === value.a[i])).toBe(true);
    // The last byte is in before its group is parsed: elements may still be told after.
    const kinds = heard.map((h) => h[0]);
    expect(kinds.filter((k) => k === 'received')).toHaveLength(1);
    expect(kinds.at(-1)).toBe('end');
    // One that comes after the end hears it all at once.
    const after = recorder();
    expect(() => reader.observe(after.observer)).toThrow(/one observer/);
  });

  it('tells the arrays of a key the body holds twice apart, and a top-level array without a key', async () => {
    const reader = new JsonReader();
    const { heard, observer } = recorder();
    reader.observe(observer);
    reader.append(Buffer.from('{"a": [1, 2], "a": [3]}'));
    expect(await reader.finish()).toEqual({ a: [3] });
    expect(heard.filter((h) => h[0] === 'elements').map((h) => [h[1], h[3], h[4]])).toEqual([
      ['a', 0, [1, 2]],
      ['a', 1, [3]],
    ]);
    const top = new JsonReader();
    const second = recorder();
    top.observe(second.observer);
    top.append(Buffer.from('[{"id": "x"}]'));
    await top.finish();
    expect(second.heard.filter((h) => h[0] === 'elements')).toEqual([
      ['elements', undefined, 1, 0, [{ id: 'x' }]],
    ]);
  });

  it('abandons the observer of a body that is refused, and tells it nothing after', async () => {
    for (const text of [
      `{"a": [${JSON.stringify(records(3000, 'a')).slice(1, -1)}, {"b": x}, {"c": 1}]}`,
      `{"a": [{"b": 1}, ${'['.repeat(120)}${']'.repeat(120)}]}`,
      `{"a": [{"b": 1}, {"c": 2}`,
    ]) {
      const reader = new JsonReader();
      const { heard, observer } = recorder();
      reader.observe(observer);
      await feed(reader, Buffer.from(text), 50_000);
      await expect(reader.finish()).rejects.toThrow();
      const kinds = heard.map((h) => h[0]);
      expect(
        kinds.filter((k) => k === 'abandon'),
        text.slice(0, 40),
      ).toHaveLength(1);
      expect(kinds.slice(kinds.indexOf('abandon') + 1)).toEqual([]);
      expect(kinds).not.toContain('end');
      // An observer that comes after the refusal is abandoned at once.
      const late = recorder();
      reader.observe(late.observer);
      expect(late.heard).toEqual([['abandon']]);
    }
  });
});

describe('jsonBodiesInTurns', () => {
  /** An app echoing the parsed body, with bodies of `minBytes` or more read in turns. */
  async function echo(minBytes: number, onLarge?: () => void) {
    const app = express();
    app.use(jsonBodies(4096, { minBytes, onLarge }));
    app.post('/echo', (req, res) => {
      res.json({
        body: req.body as unknown,
        proto: Object.getPrototypeOf(req.body ?? {}) === Object.prototype,
      });
    });
    app.use(errorHandler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/echo`;
    return { url, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  it('tells as each body it reads begins, and of no other', async () => {
    let told = 0;
    const app = await echo(100, () => told++);
    try {
      const post = (body: string) =>
        fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect((await post('{"small": [1]}')).status).toBe(200);
      expect(told).toBe(0);
      const large = JSON.stringify({ large: Array.from({ length: 40 }, (_, i) => i) });
      expect(large.length).toBeGreaterThanOrEqual(100);
      const res = await post(large);
      expect(await res.json()).toEqual({ body: JSON.parse(large), proto: true });
      expect(told).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('keeps answering when bodies stop short of their length and their connections close', async () => {
    const app = await echo(16);
    try {
      const { port } = new URL(app.url);
      for (const close of ['destroy', 'end'] as const) {
        const socket = net.connect(Number(port), '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(
          'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a": [1, 2',
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
        socket.on('error', () => {});
        socket.resume(); // the server's answer, if any, is read and dropped
        if (close === 'destroy') socket.destroy();
        else socket.end();
        await new Promise((resolve) => socket.once('close', resolve));
      }
      const res = await fetch(app.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"read": "in turns", "n": [1, 2, 3]}',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ body: { read: 'in turns', n: [1, 2, 3] }, proto: true });
    } finally {
      await app.close();
    }
  });

  it('reads a large body as bulk work: its parsing and its route give way while other requests come', async () => {
    const app = express();
    app.use(jsonBodies(64 * 1024 * 1024, { minBytes: 1024 * 1024 }));
    app.use(errorHandler);
    app.post('/bulk', async (req, res) => {
      // The route's turns are bulk work's: after 8 ms of work, with a request just come, 24 ms.
      requestCame();
      const end = performance.now() + 8;
      while (performance.now() < end);
      const start = performance.now();
      await nextTurn();
      res.json({
        records: (req.body as { biosample_set: unknown[] }).biosample_set.length,
        waited: performance.now() - start,
      });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bulk`;
    const records = Array.from({ length: 60_000 }, (_, i) => ({
      id: `nmdc:bsm-11-${i}`,
      name: `sample ${i}`,
      depth: i / 7,
    }));
    const body = JSON.stringify({ biosample_set: records });
    expect(body.length).toBeGreaterThan(1024 * 1024);
    const post = async () => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      return (await res.json()) as { records: number; waited: number };
    };
    try {
      // Nobody else asking (no request came for over 100 ms): read at once.
      await new Promise((resolve) => setTimeout(resolve, 120));
      const waits = gaveWay.times;
      const alone = await post();
      expect(alone.records).toBe(60_000);
      expect(alone.waited).toBeGreaterThanOrEqual(20);
      // The route's turn gave way (other files' work left in this process may count here too).
      const aloneWaits = gaveWay.times - waits;
      expect(aloneWaits).toBeGreaterThanOrEqual(1);
      // Requests coming all along: its parsing gives way between its turns as well.
      const asking = setInterval(requestCame, 5);
      const before = gaveWay.times;
      try {
        const meanwhile = await post();
        expect(meanwhile.records).toBe(60_000);
        // A body broken in its middle is refused as ever, where it breaks, while giving way.
        const broken = body.replace('"depth":4285', '"depth"4285'); // a colon missing, halfway in
        expect(broken.length).toBe(body.length - 1);
        const refused = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: broken,
        });
        expect(refused.status).toBe(422);
        expect(((await refused.json()) as { detail: string }).detail).toMatch(
          /^Request body is not valid JSON: /,
        );
        // A body whose sender stops halfway and leaves: the next body is read whole.
        const { port } = new URL(url);
        const socket = net.connect(Number(port), '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.on('error', () => {});
        socket.write(
          `POST /bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        socket.write(body.slice(0, body.length / 2));
        await new Promise((resolve) => setTimeout(resolve, 50));
        socket.destroy();
        expect((await post()).records).toBe(60_000);
      } finally {
        clearInterval(asking);
      }
      expect(gaveWay.times - before).toBeGreaterThan(aloneWaits + 3);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers as express.json for bodies it reads and bodies it leaves', async () => {
    const inTurnsApp = await echo(0);
    const plainApp = await echo(Infinity);
    const requests: Array<{ body: string; type?: string; encoding?: string }> = [
      ...VALID.map((body) => ({ body })),
      ...INVALID.map((body) => ({ body })),
      { body: '{"a": [1]}', type: 'application/json; charset=utf-8' },
      { body: '{"a": [1]}', type: 'application/json; charset=latin1' },
      { body: '{"a": [1]}', type: 'application/merge-patch+json' },
      { body: '{"a": [1]}', type: 'text/plain' },
      { body: `{"a": "${'x'.repeat(5000)}"}` },
      { body: `{"a": [${'['.repeat(120)}${']'.repeat(120)}]}` },
      { body: '' },
      { body: `[${'1,'.repeat(3000)}1]` },
    ];
    try {
      for (const r of requests) {
        const answers = [];
        for (const { url } of [inTurnsApp, plainApp]) {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': r.type ?? 'application/json' },
            body: r.body,
          });
          answers.push({
            status: res.status,
            body: (await res.json()) as { body?: unknown; detail?: string },
          });
        }
        const [ours, theirs] = answers;
        expect(ours!.status, r.body).toBe(theirs!.status);
        if (ours!.status === 200) expect(ours!.body, r.body).toEqual(theirs!.body);
        else if (ours!.status === 422) expect(ours!.body.detail).toMatch(/^Request body is not valid JSON: /);
        else expect(ours!.body, r.body).toEqual(theirs!.body);
      }
    } finally {
      await inTurnsApp.close();
      await plainApp.close();
    }
  });
});
