/**
 * Large JSON answers made in turns (src/http/answer.ts): the pieces are exactly `JSON.stringify`
 * of the value, and a large answer goes out with the same status, headers and body as `res.json`.
 */
import { describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import { answerLargeJson, jsonPiecesInTurns } from '../../../src/http/answer.ts';

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
});
