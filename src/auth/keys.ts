/**
 * The service's signing keys (RS256 and ES256) and cookie keys. Taken from `SIGNING_KEYS` when
 * configured; otherwise generated on first start and persisted in the state store so restarts
 * and sibling processes keep accepting the tokens already issued.
 */
import { randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { StateStore } from '../store/port.ts';

const KIND = 'auth_keys';

export interface ServiceKeys {
  /** Private JWKS handed to the provider. */
  signing: { keys: JWK[] };
  /** The same keys without private parts: what tokens are verified against. */
  verification: { keys: JWK[] };
  /** Secrets signing the provider's cookies. */
  cookieKeys: string[];
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

export function publicPart(jwk: JWK): JWK {
  const out: Record<string, unknown> = { ...jwk };
  for (const member of PRIVATE_MEMBERS) delete out[member];
  return out as JWK;
}

async function generatedKey(alg: 'RS256' | 'ES256'): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'RS256' ? { modulusLength: 2048 } : {}),
  });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, alg, use: 'sig', kid: await calculateJwkThumbprint(jwk) };
}

function parseConfiguredKeys(text: string): JWK[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('SIGNING_KEYS must be a JWKS JSON text');
  }
  const keys = (parsed as { keys?: unknown }).keys;
  if (
    !Array.isArray(keys) ||
    keys.length === 0 ||
    !keys.every((k) => k && typeof k === 'object' && 'd' in k)
  ) {
    throw new Error('SIGNING_KEYS must be a JWKS with at least one private key');
  }
  return keys as JWK[];
}

async function storedOrCreated<T>(state: StateStore, key: string, create: () => Promise<T>): Promise<T> {
  const existing = await state.get<T>(KIND, key);
  if (existing !== undefined) return existing;
  await state.put(KIND, key, await create());
  // Another process may have raced us: whatever was stored last is what everyone uses.
  return (await state.get<T>(KIND, key)) as T;
}

export async function loadServiceKeys(
  configured: string | undefined,
  state: StateStore,
): Promise<ServiceKeys> {
  let signingKeys: JWK[];
  if (configured) {
    signingKeys = parseConfiguredKeys(configured);
  } else {
    signingKeys = await storedOrCreated(state, 'signing', async () => [
      await generatedKey('RS256'),
      await generatedKey('ES256'),
    ]);
  }
  const cookieKeys = await storedOrCreated(state, 'cookies', async () => [
    randomBytes(32).toString('base64url'),
  ]);
  return {
    signing: { keys: signingKeys },
    verification: { keys: signingKeys.map(publicPart) },
    cookieKeys,
  };
}
