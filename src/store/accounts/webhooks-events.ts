/** The stored data of key events (both dialects store the same fields; the service renders the payload). */
import type { ApiKeyRecord } from './types.ts'

export function keyCreatedData(k: ApiKeyRecord): Record<string, unknown> {
  return {
    key_id: k.id,
    name: k.name,
    prefix: k.prefix,
    environment: k.environment,
    kind: k.kind,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
  }
}

export function keyRevokedData(k: ApiKeyRecord): Record<string, unknown> {
  return {
    key_id: k.id,
    name: k.name,
    prefix: k.prefix,
    environment: k.environment,
    revoked_at: k.revokedAt,
  }
}
