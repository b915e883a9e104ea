/**
 * Port of the original's tests/test_api/test_main.py (v2.13.0): the start-up administrator's
 * permissions and `/health`.
 */
import { describe, expect, it } from 'vitest';
import { ALLOWANCE_ACTIONS } from '../../../src/accounts/index.ts';
import { ADMIN, withUpstreamServer, type UpstreamServer } from './support/harness.ts';
import { plainRequest, type RuntimeApiUserClient } from './support/client.ts';
import type { WireResponse } from '../support/wire.ts';
import { multipartBody } from './support/multipart.ts';

let server: UpstreamServer;

withUpstreamServer((started) => (server = started));

/**
 * One call per allowance action that the action's holder may make, shaped so that nothing is
 * changed by it (a delete matching nothing, a sheet naming a record that does not exist...).
 * Answers the response, whatever its status.
 */
async function exercise(client: RuntimeApiUserClient, action: string): Promise<WireResponse> {
  const call = async (method: string, path: string, data?: unknown) => {
    try {
      return await client.request(method, path, data);
    } catch (err) {
      return (err as { response: WireResponse }).response;
    }
  };
  switch (action) {
    case '/metadata/changesheets:submit': {
      const { body, contentType } = multipartBody(
        'uploaded_file',
        'sheet.tsv',
        'id\taction\tattribute\tvalue\nnmdc:sty-00-999999\tupdate\ttitle\tNo such study\n',
      );
      return plainRequest(server.url, 'POST', '/metadata/changesheets:submit', {
        headers: { ...(await client.headers()), 'Content-Type': contentType },
        raw: body,
      });
    }
    case '/queries:run(query_cmd:DeleteCommand)':
      return call('POST', '/queries:run', {
        delete: 'study_set',
        deletes: [{ q: { id: 'nmdc:sty-00-999999' }, limit: 1 }],
      });
    case '/queries:run(query_cmd:AggregateCommand)':
      return call('POST', '/queries:run', { aggregate: 'study_set', pipeline: [{ $match: { id: 'none' } }] });
    case '/metadata/json:submit':
      return call('POST', '/metadata/json:submit', { study_set: [] });
    case '/wf_file_staging':
      return call('GET', '/wf_file_staging/globus_tasks');
    case '/admin/allowances':
      return call('GET', '/admin/allowances');
    case '/admin/site_clients':
      return call('PATCH', '/admin/site_clients/no-such-site-client', {});
    default:
      throw new Error(`no call exercises ${action}`);
  }
}

describe('tests/test_api/test_main.py', () => {
  it('test_main.py::test_admin_user_perms', async () => {
    // The original stores one allowance per action for `admin` at start. Here the start-up
    // administrator is a runtime administrator, permitted every action by that role: no allowance
    // records are kept for it (see the port's README), and every action is open to it.
    const admin = server.adminClient();
    expect(admin.username).toBe(ADMIN.username);
    const listed = await admin.request('GET', '/admin/allowances', { username: ADMIN.username });
    expect(listed.json).toEqual({ resources: [] });
    const actions = (await admin.request('GET', '/admin/allowances/actions')).json as string[];
    expect(new Set(actions)).toEqual(new Set(ALLOWANCE_ACTIONS));

    const user = server.userClient();
    for (const action of actions) {
      const asAdmin = await exercise(admin, action);
      const asUser = await exercise(user, action);
      // The user, holding no allowance, is refused; the administrator gets past the check.
      expect(asUser.status, `${action} as testuser: ${asUser.text}`).toBe(403);
      expect(asAdmin.status, `${action} as admin: ${asAdmin.text}`).not.toBe(403);
      expect(asAdmin.status, `${action} as admin: ${asAdmin.text}`).toBeLessThan(500);
    }
  });

  it('test_main.py::test_health', async () => {
    const res = await server.userClient().request('get', '/health');
    expect(res.status).toBe(200);
    expect(res.json.web_server).toBe(true);
    expect(res.json.database).toBe(true);
  });
});
