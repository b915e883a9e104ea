/**
 * The docs page's "Try it out" fills each parameter with its example: on the demo data every
 * Metadata access read answers with something, the provenance graph's included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import { prepareData } from '../../src/startup.ts';
import { loadCurrentDocument } from '../../src/http/openapi-documents.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  await prepareData({ ...t, config: { ...t.config, demoData: true } });
}, 60_000);
afterAll(async () => t?.close());

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
  $ref?: string;
}

const doc = loadCurrentDocument() as any;
const resolve = (p: Parameter): Parameter =>
  p.$ref ? (doc.components.parameters[p.$ref.split('/').pop()!] as Parameter) : p;

const examples = Object.entries(doc.paths as Record<string, any>)
  .filter(([, item]) => item.get?.tags?.includes('Metadata access'))
  .map(([path, item]) => {
    const params = ((item.get.parameters ?? []) as Parameter[]).map(resolve);
    let target = path;
    const query: string[] = [];
    for (const p of params) {
      if (p.in === 'path') target = target.replace(`{${p.name}}`, String(p.example));
      else if (p.in === 'query' && p.required)
        for (const v of [p.example].flat()) query.push(`${p.name}=${encodeURIComponent(String(v))}`);
    }
    return [path, target + (query.length ? `?${query.join('&')}` : '')] as const;
  });

describe('docs examples on the demo data', () => {
  it('cover the provenance graph', () => {
    expect(examples.map(([p]) => p)).toEqual(
      expect.arrayContaining([
        '/nmdcschema/linked_instances',
        '/data_objects/study/{study_id}',
        '/workflow_executions/{workflow_execution_id}/related_resources',
      ]),
    );
  });

  it.each(examples)('%s answers its example (%s) with something', async (_path, target) => {
    const res = await request(t.app).get(target).buffer(true);
    expect(res.status, `${target}: ${String(res.text).slice(0, 200)}`).toBe(200);
    if (res.type === 'application/x-ndjson') {
      // The export streams records a line each.
      const lines = String(res.text ?? res.body)
        .split('\n')
        .filter(Boolean);
      expect(lines.length, target).toBeGreaterThan(0);
      expect(JSON.parse(lines[0]!)).toHaveProperty('id');
      return;
    }
    const body = res.body;
    const list = Array.isArray(body) ? body : (body.resources ?? body.results ?? body.data_objects);
    if (list !== undefined) expect(list.length, target).toBeGreaterThan(0);
    else expect(Object.keys(body).length, target).toBeGreaterThan(0);
  });
});
