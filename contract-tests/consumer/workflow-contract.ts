/**
 * The workflow-management contract both SDK consumers share (their generated clients have the same
 * operations for it): a site client claims a job, gets 409 naming the held operation on a second
 * claim, reports progress and completion on its operation, and another site's client gets 403.
 */
import { expect, it } from 'vitest';
import type { PactV3 } from '@pact-foundation/pact';
import { JOB_ID, OPERATION_ID, OPERATION_PROGRESS, OPERATION_RESULT, SITE_ID } from '../contract-fixtures.ts';
import * as interaction from './interactions.ts';
import { mockServerFetch } from './mock-fetch.ts';

const SITE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXMwcGFjdDAwMDAwMDAwMSJ9.c2lnbmF0dXJl';
const OTHER_SITE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXMwcGFjdDAwMDAwMDAwMiJ9.c2lnbmF0dXJl';

interface Answer {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/** What the contract calls of a generated client. */
export interface WorkflowClient {
  claimJob(options: { path: { job_id: string } }): Promise<Answer>;
  updateOperation(options: { path: { op_id: string }; body: Record<string, unknown> }): Promise<Answer>;
}

export function workflowContract(
  pact: () => PactV3,
  createClient: (options: { baseUrl: string; token: string; fetch: typeof fetch }) => WorkflowClient,
): void {
  // A mock server cannot tell two identical requests apart: each answer has its own mock server.
  it('claims a job as a site client, and gets 409 naming the held operation on a second claim', async () => {
    await pact()
      .addInteraction(interaction.claimJob())
      .executeTest(async (mock) => {
        const site = createClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const claimed = await site.claimJob({ path: { job_id: JOB_ID } });
        expect(claimed.response.status).toBe(200);
        expect(claimed.data).toMatchObject({
          id: expect.stringMatching(/^nmdc:/),
          done: false,
          expire_time: expect.any(String),
          metadata: { job: { id: JOB_ID }, site_id: SITE_ID },
        });
      });
    await pact()
      .addInteraction(interaction.claimJobAgain())
      .executeTest(async (mock) => {
        const site = createClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const again = await site.claimJob({ path: { job_id: JOB_ID } });
        expect(again.response.status).toBe(409);
        expect(again.error).toEqual({ detail: expect.stringContaining(JOB_ID), id: OPERATION_ID });
      });
  });

  it("reports progress and completion on its operation, and gets 403 patching another site's", async () => {
    const path = { op_id: OPERATION_ID };
    await pact()
      .addInteraction(interaction.reportOperationProgress())
      .addInteraction(interaction.completeOperation())
      .executeTest(async (mock) => {
        const site = createClient({ baseUrl: mock.url, token: SITE_TOKEN, fetch: mockServerFetch });
        const progress = await site.updateOperation({ path, body: OPERATION_PROGRESS });
        expect(progress.data).toMatchObject({
          id: OPERATION_ID,
          done: false,
          metadata: { ...OPERATION_PROGRESS.metadata, job: { id: JOB_ID }, site_id: SITE_ID },
        });
        const completed = await site.updateOperation({ path, body: OPERATION_RESULT });
        expect(completed.data).toMatchObject({ id: OPERATION_ID, ...OPERATION_RESULT });
      });
    await pact()
      .addInteraction(interaction.updateOtherSitesOperation())
      .executeTest(async (mock) => {
        const other = createClient({
          baseUrl: mock.url,
          token: OTHER_SITE_TOKEN,
          fetch: mockServerFetch,
        });
        const refused = await other.updateOperation({ path, body: OPERATION_RESULT });
        expect(refused.response.status).toBe(403);
        expect(refused.error).toEqual({ detail: expect.stringContaining(SITE_ID) });
      });
  });
}
