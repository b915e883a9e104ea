/**
 * `fetch` for talking to Pact mock servers, with a short pause after each answer: the mock server
 * can answer before it has recorded the match, so a test ending right after its last request was
 * sometimes judged as never having sent it.
 */
const RECORDING_GRACE_MS = 30;

export const mockServerFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  await new Promise((resolve) => setTimeout(resolve, RECORDING_GRACE_MS));
  return response;
};
