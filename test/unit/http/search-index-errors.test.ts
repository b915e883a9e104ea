import { describe, expect, it } from 'vitest';
import { errorHandler } from '../../../src/http/error-handler.ts';
import { SearchIndexUnavailable } from '../../../search/errors.ts';

/** Runs the error handler on an error and returns the response it wrote. */
function answer(err: unknown): { status: number; body: unknown; headers: Record<string, string> } {
  const out = { status: 0, body: undefined as unknown, headers: {} as Record<string, string> };
  const res: any = {
    headersSent: false,
    set: (name: string, value: string) => ((out.headers[name] = value), res),
    status: (s: number) => ((out.status = s), res),
    json: (b: unknown) => ((out.body = b), res),
  };
  errorHandler(err, { log: { error: () => {} } } as any, res, () => {});
  return out;
}

describe('search index failures in the API', () => {
  it('answer 503 with no text of the engine, also when the failure was a 4xx of its own', () => {
    const cause = Object.assign(new Error('security_exception'), {
      meta: { statusCode: 403 },
      statusCode: 403,
    });
    const { status, body, headers } = answer(
      new SearchIndexUnavailable(
        'Elasticsearch read of its state failed: 403 security_exception: unauthorized',
        {
          cause,
        },
      ),
    );
    expect(status).toBe(503);
    expect(headers).toEqual({ 'Retry-After': '5' });
    expect(JSON.stringify(body)).not.toMatch(/security_exception|Elasticsearch/);
    expect(body).toEqual({ detail: expect.stringMatching(/try again/) });
  });
});
