/**
 * The contract's `pattern`s reach the request validator as formats checked by re2js: none is left
 * for V8, and each format accepts exactly what its pattern accepts.
 */
import { describe, expect, it } from 'vitest';
import { loadValidationDocument } from '../../../src/http/openapi-documents.ts';
import { withLinearPatterns } from '../../../src/http/contract-patterns.ts';

function patternsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => patternsIn(n, out));
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string') out.push(value);
      else patternsIn(value, out);
    }
  return out;
}

describe('the contract’s patterns', () => {
  it('become formats checked on the linear-time engine, accepting what the pattern accepts', () => {
    const original = [...new Set(patternsIn(loadValidationDocument()))];
    expect(original.length).toBeGreaterThanOrEqual(4);
    const { document, formats } = withLinearPatterns(loadValidationDocument());
    expect(patternsIn(document)).toEqual([]);
    const samples = [
      'sha256',
      'crc99',
      'application/json',
      'text/plain+x',
      'a b',
      'contigs.fna',
      'x/',
      '',
      'é',
      'a'.repeat(50_000) + '!',
    ];
    for (const pattern of original) {
      const format = formats[`matches ${pattern}`] as { validate: (s: string) => boolean };
      expect(format, pattern).toBeDefined();
      for (const s of samples)
        expect(format.validate(s), `${pattern} on ${s.slice(0, 20)}`).toBe(new RegExp(pattern).test(s));
    }
  });
});
