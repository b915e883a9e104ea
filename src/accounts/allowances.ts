/**
 * Allowances: a user may perform an action (submit metadata, delete or aggregate through
 * `/queries:run`, manage allowances...) when a record pairs their username with that action, as
 * in the original's `_runtime.api.allow`. Runtime administrators are always permitted.
 * Records live in the DocumentStore collection `allowances`, keyed by username and action so that
 * an allowance exists at most once even when two processes create it at the same moment.
 */
import type { Doc, DocumentStore, Filter } from '../store/port.ts';
import type { Principal } from './principal.ts';

export const ALLOWANCES = 'allowances';

/** The action names of the original 2.13.0 (`AllowanceAction`), in its order. */
export const ALLOWANCE_ACTIONS = [
  '/metadata/changesheets:submit',
  '/queries:run(query_cmd:DeleteCommand)',
  '/queries:run(query_cmd:AggregateCommand)',
  '/metadata/json:submit',
  '/wf_file_staging',
  '/admin/allowances',
  '/admin/site_clients',
] as const;

export type AllowanceAction = (typeof ALLOWANCE_ACTIONS)[number];

export interface Allowance {
  username: string;
  action: AllowanceAction;
}

interface AllowanceRecord extends Allowance {
  id: string;
  created_at: string;
}

export function isAllowanceAction(value: unknown): value is AllowanceAction {
  return typeof value === 'string' && (ALLOWANCE_ACTIONS as readonly string[]).includes(value);
}

/**
 * The record id of a username/action pair. The username is percent-encoded so it holds no space;
 * actions hold none either, so the first space separates the two unambiguously.
 */
export function allowanceId(username: string, action: AllowanceAction): string {
  return `${encodeURIComponent(username)} ${action}`;
}

const shown = (record: Doc): Allowance => ({
  username: record.username as string,
  action: record.action as AllowanceAction,
});

export class Allowances {
  constructor(private readonly store: DocumentStore) {}

  /**
   * Runtime administrators are always permitted; others need an allowance for principal.subject.
   * A site client is checked under its client_id, as the original treats a site client as a user
   * named by its client_id (site workers submit metadata that way).
   */
  async permits(principal: Principal, action: AllowanceAction): Promise<boolean> {
    if (principal.isRuntimeAdmin) return true;
    return this.has(principal.subject, action);
  }

  async has(username: string, action: AllowanceAction): Promise<boolean> {
    return (await this.store.getById(ALLOWANCES, allowanceId(username, action))) !== null;
  }

  /** Allowances matching the optional username and action, in username then action order. */
  async list(match: { username?: string; action?: AllowanceAction } = {}): Promise<Allowance[]> {
    const filter: Filter = {};
    if (match.username !== undefined) filter.username = match.username;
    if (match.action !== undefined) filter.action = match.action;
    const records = await this.store.find(ALLOWANCES, filter, {
      sort: [
        ['username', 1],
        ['action', 1],
        ['id', 1],
      ],
    });
    return records.map(shown);
  }

  /** Creates the allowance; false when it already existed (decided atomically by the store). */
  async create(allowance: Allowance): Promise<boolean> {
    const record: AllowanceRecord = {
      id: allowanceId(allowance.username, allowance.action),
      username: allowance.username,
      action: allowance.action,
      created_at: new Date().toISOString(),
    };
    return this.store.insertIfAbsent(ALLOWANCES, record as unknown as Doc);
  }

  /** Removes the allowance; false when there was none. */
  async remove(allowance: Allowance): Promise<boolean> {
    const deleted = await this.store.deleteMany(ALLOWANCES, {
      id: allowanceId(allowance.username, allowance.action),
    });
    return deleted.length > 0;
  }
}
