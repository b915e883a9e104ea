/**
 * The service a surface fuzz run aims at: `src/main.ts` as its own process (under its primary,
 * info logs kept, demo data loaded), with an administrator, a user without allowances and a site
 * client logged in, and ids of records that exist.
 */
import { form, startLoggingServer } from '../reliability/process-faults.ts';
import type { Context } from './surface.ts';

const ADMIN = { ADMIN_USERNAME: 'fuzz-root', ADMIN_PASSWORD: 'fuzzing the whole surface at once' };
const USER = { username: 'fuzz-user', password: 'a user without allowances' };

export interface FuzzTarget {
  url: string;
  context: Context;
  adminAuth: string;
  /** The deaths of server processes the primary logged (each replaced), with their causes. */
  deaths(): string[];
  healthy(): Promise<boolean>;
  stop(): Promise<void>;
}

async function json(url: string, init?: RequestInit): Promise<any> {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** `root`: the checkout whose `src/main.ts` runs (this one by default). */
export async function startFuzzTarget(dataDir: string, root?: string): Promise<FuzzTarget> {
  const server = await startLoggingServer({ DATA_DIR: dataDir, DEMO_DATA: 'true', ...ADMIN }, root);
  const { url } = server;
  let exited: string | undefined;
  void server.exited.then((code) => (exited = `code ${String(code)}`));
  const login = async (fields: Record<string, string>) =>
    `Bearer ${(await json(`${url}/token`, form(fields))).access_token as string}`;
  const adminAuth = await login({
    grant_type: 'password',
    username: ADMIN.ADMIN_USERNAME,
    password: ADMIN.ADMIN_PASSWORD,
  });
  const asAdmin = { authorization: adminAuth, 'content-type': 'application/json' };
  await json(`${url}/users`, { method: 'POST', headers: asAdmin, body: JSON.stringify(USER) });
  const userAuth = await login({ grant_type: 'password', ...USER });
  await json(`${url}/sites`, { method: 'POST', headers: asAdmin, body: JSON.stringify({ id: 'fuzz-site' }) });
  const credentials = await json(`${url}/sites/fuzz-site:generateCredentials`, {
    method: 'POST',
    headers: asAdmin,
  });
  const siteAuth = await login({ grant_type: 'client_credentials', ...credentials });
  const ids: string[] = [];
  for (const find of ['/biosamples', '/studies', '/data_objects', '/planned_processes'])
    for (const r of (await json(`${url}${find}?per_page=3`)).results as Array<{ id: string }>) ids.push(r.id);
  return {
    url,
    adminAuth,
    context: {
      auths: [undefined, adminAuth, userAuth, siteAuth, 'Bearer forged.eyJzdWIiOiJyb290In0.signature'],
      ids: [...ids, 'fuzz-site', credentials.client_id as string],
    },
    deaths: () => [
      ...server
        .logs()
        .split('\n')
        .filter((line) => line.includes('server process died'))
        .map((line) => String((JSON.parse(line) as { cause?: string }).cause).split('\n')[0]!),
      // A service without a primary (an older version) ends with its only process.
      ...(exited ? [`the service's process exited (${exited})`] : []),
    ],
    healthy: async () =>
      fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      ),
    stop: async () => {
      server.kill('SIGKILL');
      await server.exited;
    },
  };
}
