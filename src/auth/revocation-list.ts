/**
 * Revoked access tokens by `jti`. JWT access tokens are not stored by the provider, so
 * revocation is a list in the shared state store, kept until the token would expire anyway.
 */
import type { StateStore } from '../store/port.ts';

const KIND = 'revoked_access_token';

export class RevocationList {
  constructor(private readonly state: StateStore) {}

  async revoke(jti: string, expiresAt: number): Promise<void> {
    const remaining = Math.ceil(expiresAt - Date.now() / 1000);
    if (remaining <= 0) return;
    await this.state.put(KIND, jti, { revoked_at: new Date().toISOString() }, remaining + 60);
  }

  async isRevoked(jti: string): Promise<boolean> {
    return (await this.state.get(KIND, jti)) !== undefined;
  }
}
