/**
 * Large JSON answers made in turns (src/http/answer.ts): the pieces are exactly `JSON.stringify`
 * of the value, and a large answer goes out with the same status, headers and body as `res.json`.
 */
import { describe, expect, it, vi } from 'vitest';
import express from 'express';
import request from 'supertest';
import { answerLargeJson, jsonPiecesInTurns } from '../../../src/http/answer.ts';
import { JsonText, RecordText } from '../../../src/json-text.ts';

const tricky = {
  a: [1, 'two', null, undefined, () => 3, { b: undefined, c: [undefined, Symbol('s')] }],
  d: new Date(Date.UTC(2026, 10, 26)),
  e: undefined,
  f: () => 1,
  'quote"key': 'line\nbreak "quoted" \u2028 é 🌍',
  n: [0, -0, 1.5e300, NaN, Infinity],
  deep: { x: { y: { z: [1, { w: [2, undefined] }] } } },
  withJson: { toJSON: () => ({ replaced: true }) },
  '10': 'integer-like key first',
};

describe('JSON answers made in turns', () => {
  it('makes pieces that join to JSON.stringify of the value', async () => {
    for (const value of [tricky, [tricky, tricky], 'text', 5, null, [], {}, [undefined], { a: [] }]) {
      expect((await jsonPiecesInTurns(value)).join('')).toBe(JSON.stringify(value));
    }
    // Many records: more than one piece, still the same text.
    const records = Array.from({ length: 20_000 }, (_, i) => ({
      id: `nmdc:bsm-11-${i}`,
      name: 'x'.repeat(80),
      i,
    }));
    const pieces = await jsonPiecesInTurns({ resources: records, next_page_token: null });
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(JSON.stringify({ resources: records, next_page_token: null }));
  });

  it('answers a large value with the status, headers and body res.json gives', async () => {
    const value = {
      cursor: { firstBatch: Array.from({ length: 1500 }, (_, i) => ({ id: `r${i}`, e: 'é' })) },
      ok: 1,
    };
    const app = express();
    app.set('etag', false); // as the service's app
    app.get('/large', (_req, res) => {
      // Written in turns, not by res.json (as the response validator, which replaces it, is skipped).
      res.json = () => {
        throw new Error('res.json was called');
      };
      void answerLargeJson(res, value);
    });
    app.get('/express', (_req, res) => void res.json(value));
    const ours = await request(app).get('/large').expect(200);
    const theirs = await request(app).get('/express').expect(200);
    expect(ours.text).toBe(theirs.text);
    expect(ours.headers['content-type']).toBe(theirs.headers['content-type']);
    expect(ours.headers['content-length']).toBe(theirs.headers['content-length']);
    const head = await request(app).head('/large').expect(200);
    expect(head.headers['content-length']).toBe(theirs.headers['content-length']);
  });

  it('writes values given as JSON text as they are, and parses them for res.json when the answer is small', async () => {
    const records = [{ id: 'a', s: 'é "q"' }, { n: [1, 2.5, null] }];
    const batch = records.map((r) => new JsonText(JSON.stringify(r)));
    const cursor = (b: unknown[]) => ({ ok: 1, cursor: { firstBatch: b, batch: b, id: null } });
    expect((await jsonPiecesInTurns(cursor(batch))).join('')).toBe(JSON.stringify(cursor(records)));
    // As a caller unaware of them would write them: the same JSON.
    expect(JSON.stringify(cursor(batch))).toBe(JSON.stringify(cursor(records)));
    // Over a megabyte of text: written in turns, never given to res.json.
    const large = Array.from({ length: 40 }, (_, i) => ({ i, a: 'x'.repeat(30_000) }));
    const app = express();
    app.set('etag', false);
    let jsonCalls: unknown[] = [];
    app.get('/:size', (req, res) => {
      const json = res.json.bind(res);
      res.json = (body: unknown) => {
        jsonCalls.push(body);
        return json(body);
      };
      const texts = (req.params.size === 'large' ? large : records).map(
        (r) => new JsonText(JSON.stringify(r)),
      );
      void answerLargeJson(res, cursor(texts));
    });
    const big = await request(app).get('/large').expect(200);
    expect(big.text).toBe(JSON.stringify(cursor(large)));
    expect(big.headers['content-length']).toBe(String(Buffer.byteLength(big.text)));
    expect(jsonCalls).toEqual([]);
    // Small: res.json (which the response validator checks) is given the parsed records.
    jsonCalls = [];
    const small = await request(app).get('/small').expect(200);
    expect(small.text).toBe(JSON.stringify(cursor(records)));
    expect(jsonCalls).toEqual([cursor(records)]);
  });

  it("writes a small answer's stored texts as they are when res.json is Express's own", async () => {
    const records = [
      { id: 'a', s: 'é "q" \u2028 🌍' },
      { id: 'b', n: [1, 2.5, null], o: { p: [] } },
    ];
    const texts = records.map((r) => JSON.stringify(r));
    const value = { resources: records.map((r, i) => new RecordText(r.id, texts[i]!)), next_page_token: 't' };
    const app = express();
    app.set('etag', false); // as the service's app
    app.get('/texts', (_req, res) => void answerLargeJson(res, value));
    app.get('/express', (_req, res) => void res.json({ resources: records, next_page_token: 't' }));
    const parse = vi.spyOn(JSON, 'parse');
    let parsedTexts: unknown[];
    let ours: request.Response;
    let head: request.Response;
    try {
      ours = await request(app).get('/texts').expect(200);
      head = await request(app).head('/texts').expect(200);
    } finally {
      parsedTexts = parse.mock.calls.filter(([text]) => texts.includes(text as string));
      parse.mockRestore();
    }
    expect(parsedTexts).toEqual([]);
    const theirs = await request(app).get('/express').expect(200);
    expect(ours.text).toBe(theirs.text);
    expect(ours.headers['content-type']).toBe(theirs.headers['content-type']);
    expect(ours.headers['content-length']).toBe(theirs.headers['content-length']);
    expect(head.headers['content-length']).toBe(theirs.headers['content-length']);
    expect(head.text ?? '').toBe('');
  });
});
