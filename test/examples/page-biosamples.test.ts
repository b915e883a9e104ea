import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts, setBcryptCost } from '../../src/accounts/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { main } from '../../examples/page-biosamples.ts';

setBcryptCost(4);

const STUDY = 'nmdc:sty-11-example1';
const OTHER_STUDY = 'nmdc:sty-11-example2';
const OF_STUDY = 23;

let server: TestServer;
let credentials: { client_id: string; client_secret: string };

beforeAll(async () => {
  server = await startTestServer();
  const studies = [STUDY, OTHER_STUDY].map((id, i) => ({
    id,
    type: 'nmdc:Study',
    name: `Example study ${i + 1}`,
  }));
  const biosamples = Array.from({ length: OF_STUDY + 7 }, (_, i) => ({
    id: `nmdc:bsm-11-ex${String(i).padStart(4, '0')}`,
    type: 'nmdc:Biosample',
    name: `Example core ${i}`,
    associated_studies: [i < OF_STUDY ? STUDY : OTHER_STUDY],
  }));
  for (const [collection, docs] of [
    ['study_set', studies],
    ['biosample_set', biosamples],
  ] as const) {
    await server.store.upsertMany(collection, [...docs]);
    await server.searchIndex.index(collection, [...docs]);
  }
  const accounts = new Accounts(server.store);
  const owner = await accounts.createUser({ username: 'example-owner', password: 'example-owner-password' });
  await accounts.createSite('example-lab', [], owner.username);
  credentials = await accounts.generateSiteCredentials(
    'example-lab',
    (await accounts.getUser(owner.username))!,
  );
});
afterAll(async () => server?.close());

describe('examples/page-biosamples.ts', () => {
  it('logs in as a site client, picks the first study and prints the count of its biosamples over several pages', async () => {
    const lines: string[] = [];
    const result = await main({
      baseUrl: server.url,
      clientId: credentials.client_id,
      clientSecret: credentials.client_secret,
      perPage: 5,
      print: (line) => lines.push(line),
    });
    expect(result).toEqual({ studyId: STUDY, count: OF_STUDY });
    expect(lines[0]).toBe(`Study ${STUDY}`);
    expect(lines.at(-1)).toBe(`${OF_STUDY} biosamples in study ${STUDY}`);
  });

  it('counts the biosamples of the study named by STUDY_ID', async () => {
    const lines: string[] = [];
    await main({
      baseUrl: server.url,
      clientId: credentials.client_id,
      clientSecret: credentials.client_secret,
      studyId: OTHER_STUDY,
      print: (line) => lines.push(line),
    });
    expect(lines.at(-1)).toBe(`7 biosamples in study ${OTHER_STUDY}`);
  });

  it('stops with the service detail when the client secret is wrong', async () => {
    await expect(
      main({ baseUrl: server.url, clientId: credentials.client_id, clientSecret: 'wrong', print: () => {} }),
    ).rejects.toThrow('Login failed (401): {"detail":"Incorrect client_id or client_secret"}');
  });
});
