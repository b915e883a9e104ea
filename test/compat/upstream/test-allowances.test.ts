/**
 * Port of the original's tests/test_api/test_allowances.py (v2.13.0): `/admin/allowances` as
 * testuser, who holds only the `/admin/allowances` allowance; before each test every other
 * allowance is put aside, and afterwards restored (the original's autouse fixture).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALLOWANCE_ACTIONS, type Allowance } from '../../../src/accounts/index.ts';
import { TEST_USER, withUpstreamServer, type UpstreamServer } from './support/harness.ts';

let server: UpstreamServer;
let before: Allowance[] = [];

withUpstreamServer((started) => (server = started));

async function removeAll(): Promise<void> {
  for (const allowance of await server.allowances.list()) await server.allowances.remove(allowance);
}

beforeEach(async () => {
  before = await server.allowances.list();
  await removeAll();
  await server.allowances.create({ username: TEST_USER.username, action: '/admin/allowances' });
});
afterEach(async () => {
  await removeAll();
  for (const allowance of before) await server.allowances.create(allowance);
});

const insert = async (allowances: Allowance[]) => {
  for (const allowance of allowances) expect(await server.allowances.create(allowance)).toBe(true);
};
const exists = async (allowance: Allowance) =>
  (await server.allowances.list(allowance)).some(
    (a) => a.username === allowance.username && a.action === allowance.action,
  );

const AGGREGATE = '/queries:run(query_cmd:AggregateCommand)';
const DELETE = '/queries:run(query_cmd:DeleteCommand)';
const CHANGESHEETS = '/metadata/changesheets:submit';

describe('tests/test_api/test_allowances.py', () => {
  it('test_allowances.py::test_list_all_allowances', async () => {
    await insert([
      { username: 'user_1', action: AGGREGATE },
      { username: 'user_2', action: DELETE },
    ]);
    const rv = await server.userClient().request('GET', '/admin/allowances');
    expect(rv.status).toBe(200);
    // Two from the test and testuser's own.
    expect(rv.json.resources).toHaveLength(3);
    expect(rv.json.resources).toEqual(
      expect.arrayContaining([
        { username: 'user_1', action: AGGREGATE },
        { username: 'user_2', action: DELETE },
        { username: TEST_USER.username, action: '/admin/allowances' },
      ]),
    );
  });

  it('test_allowances.py::test_list_allowances_by_username', async () => {
    await insert([
      { username: 'user_1', action: AGGREGATE },
      { username: 'user_1', action: DELETE },
      { username: 'user_2', action: CHANGESHEETS },
    ]);
    const rv = await server.userClient().request('GET', '/admin/allowances?username=user_1');
    expect(rv.status).toBe(200);
    const received = rv.json.resources as Allowance[];
    expect(received).toHaveLength(2);
    expect(received.every((a) => a.username === 'user_1')).toBe(true);
  });

  it('test_allowances.py::test_list_allowances_by_action', async () => {
    await insert([
      { username: 'user_1', action: CHANGESHEETS },
      { username: 'user_2', action: CHANGESHEETS },
      { username: 'user_3', action: DELETE },
    ]);
    // The action goes on the wire as the original's client writes it: `/` and `:` unencoded.
    const rv = await server.userClient().request('GET', `/admin/allowances?action=${CHANGESHEETS}`);
    expect(rv.status).toBe(200);
    const received = rv.json.resources as Allowance[];
    expect(received).toHaveLength(2);
    expect(received.every((a) => a.action === CHANGESHEETS)).toBe(true);
  });

  it('test_allowances.py::test_list_allowance_by_username_and_action', async () => {
    await insert([
      { username: 'user_1', action: CHANGESHEETS },
      { username: 'user_1', action: DELETE },
    ]);
    const rv = await server
      .userClient()
      .request('GET', `/admin/allowances?username=user_1&action=${CHANGESHEETS}`);
    expect(rv.status).toBe(200);
    expect(rv.json.resources).toEqual([{ username: 'user_1', action: CHANGESHEETS }]);
  });

  it('test_allowances.py::test_create_allowance', async () => {
    const allowance = { username: 'user_1', action: CHANGESHEETS } as const;
    expect(await exists(allowance)).toBe(false);
    const rv = await server.userClient().request('POST', '/admin/allowances', allowance);
    expect(rv.status).toBe(201);
    expect(rv.json.username).toBe(allowance.username);
    expect(rv.json.action).toBe(allowance.action);
    expect(await exists(allowance)).toBe(true);
  });

  it('test_allowances.py::test_create_duplicate_allowance', async () => {
    const allowance = { username: 'user_1', action: CHANGESHEETS } as const;
    await insert([allowance]);
    const res = await server.userClient().failing('POST', '/admin/allowances', { ...allowance });
    expect(res.status).toBe(409);
    expect(res.json.detail).toBe(`Allowance already exists for user 'user_1' and action '${CHANGESHEETS}'`);
  });

  it('test_allowances.py::test_delete_allowance', async () => {
    const allowance = { username: 'user_1', action: CHANGESHEETS } as const;
    await insert([allowance]);
    expect(await exists(allowance)).toBe(true);
    const rv = await server
      .userClient()
      .request('DELETE', `/admin/allowances?username=${allowance.username}&action=${allowance.action}`);
    expect(rv.status).toBe(204);
    expect(rv.text).toBe('');
    expect(await exists(allowance)).toBe(false);
  });

  it('test_allowances.py::test_delete_nonexistent_allowance', async () => {
    const allowance = { username: 'user_1', action: CHANGESHEETS } as const;
    expect(await exists(allowance)).toBe(false);
    const res = await server
      .userClient()
      .failing('DELETE', `/admin/allowances?username=${allowance.username}&action=${allowance.action}`);
    expect(res.status).toBe(404);
    expect(res.json.detail).toBe(`No allowance found for user 'user_1' and action '${CHANGESHEETS}'`);
  });

  it('test_allowances.py::test_list_valid_actions', async () => {
    const rv = await server.userClient().request('GET', '/admin/allowances/actions');
    expect(rv.status).toBe(200);
    expect(new Set(rv.json)).toEqual(new Set(ALLOWANCE_ACTIONS));
    expect(rv.json).toHaveLength(ALLOWANCE_ACTIONS.length);
  });

  it('test_allowances.py::test_delete_allowance_missing_parameters', async () => {
    const res = await server.userClient().failing('DELETE', '/admin/allowances?username=user_1');
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.json.detail)).toContain('action');
  });
});
