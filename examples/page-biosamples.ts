/**
 * Pages through every biosample of a study with the typed 2.13.0 SDK.
 *
 *   BASE_URL=http://localhost:8080 CLIENT_ID=... CLIENT_SECRET=... [STUDY_ID=nmdc:sty-...] npm run example
 *
 * Logs in with the site client's credentials, picks the study (the first one when STUDY_ID is not
 * set), follows the find cursor through all pages of `associated_studies:<study id>` and prints
 * the count.
 */
import { pathToFileURL } from 'node:url';
import { createNmdcClient } from '../generated/sdk-2.13.0/index.ts';

export interface ExampleOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The study whose biosamples to count; the first study of the service when absent. */
  studyId?: string;
  /** Page size of each request. */
  perPage?: number;
  /** Where progress and the result are printed. */
  print?: (line: string) => void;
}

export async function main(options: ExampleOptions): Promise<{ studyId: string; count: number }> {
  const print = options.print ?? ((line: string) => console.log(line));
  const nmdc = createNmdcClient({ baseUrl: options.baseUrl });

  const login = await nmdc.login({
    body: {
      grant_type: 'client_credentials',
      client_id: options.clientId,
      client_secret: options.clientSecret,
    },
  });
  if (!login.data) throw new Error(`Login failed (${login.response.status}): ${JSON.stringify(login.error)}`);
  nmdc.setToken(login.data.access_token);

  let studyId = options.studyId;
  if (!studyId) {
    const studies = await nmdc.findStudies({ query: { per_page: 1 } });
    const first = studies.data?.results[0];
    if (!first) throw new Error('The service has no studies; set STUDY_ID');
    studyId = first.id;
  }
  print(`Study ${studyId}`);

  let count = 0;
  for await (const biosample of nmdc.paginate('findBiosamples', {
    query: { filter: `associated_studies:${studyId}`, per_page: options.perPage ?? 100, fields: 'id,name' },
  })) {
    count += 1;
    if (count <= 3) print(`  ${biosample.id}  ${String(biosample.name ?? '')}`);
  }
  print(`${count} biosamples in study ${studyId}`);
  return { studyId, count };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { BASE_URL, CLIENT_ID, CLIENT_SECRET, STUDY_ID } = process.env;
  if (!CLIENT_ID || !CLIENT_SECRET) {
    console.error(
      'Set CLIENT_ID and CLIENT_SECRET (POST /sites, then POST /sites/{site_id}:generateCredentials)',
    );
    process.exit(2);
  }
  main({
    baseUrl: BASE_URL ?? 'http://localhost:8080',
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    ...(STUDY_ID ? { studyId: STUDY_ID } : {}),
  }).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
