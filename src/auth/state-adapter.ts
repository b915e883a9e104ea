/**
 * oidc-provider adapter over the shared StateStore: sessions, interactions, grants, codes and
 * other artifacts outlive a restart and are visible to every service process.
 */
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { StateStore } from '../store/port.ts';

/** Models that carry a grantId and must go when their grant is revoked. */
const GRANT_BOUND = [
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'Grant',
];

const kindOf = (model: string) => `oidc:${model}`;

/** Models that hold an account's sign-in at the provider, or what it was granted through one. */
const ACCOUNT_BOUND = [...GRANT_BOUND, 'Session'];

/**
 * Ends every sign-in of `accountId` at the provider: its sessions (so the docs page must ask for
 * the password again) and the grants, codes and tokens issued through them. Called when the
 * account's password changes.
 */
export async function endSignInsOf(state: StateStore, accountId: string): Promise<void> {
  for (const model of ACCOUNT_BOUND) await state.deleteBy(kindOf(model), 'accountId', accountId);
}

export function stateStoreAdapter(state: StateStore): new (name: string) => Adapter {
  return class StateStoreAdapter implements Adapter {
    private readonly kind: string;
    constructor(private readonly name: string) {
      this.kind = kindOf(name);
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await state.put(this.kind, id, payload, expiresIn > 0 ? expiresIn : undefined);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      return state.get<AdapterPayload>(this.kind, id);
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return (await state.findBy<AdapterPayload>(this.kind, 'userCode', userCode))[0]?.value;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return (await state.findBy<AdapterPayload>(this.kind, 'uid', uid))[0]?.value;
    }

    async consume(id: string): Promise<void> {
      const payload = await state.get<AdapterPayload>(this.kind, id);
      if (!payload) return;
      const remaining =
        typeof payload.exp === 'number' ? payload.exp - Math.floor(Date.now() / 1000) : undefined;
      await state.put(
        this.kind,
        id,
        { ...payload, consumed: Math.floor(Date.now() / 1000) },
        remaining && remaining > 0 ? remaining : undefined,
      );
    }

    async destroy(id: string): Promise<void> {
      await state.delete(this.kind, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      for (const model of GRANT_BOUND) {
        if (model === 'Grant') await state.delete(kindOf(model), grantId);
        else await state.deleteBy(kindOf(model), 'grantId', grantId);
      }
    }
  };
}
