/**
 * The Plaid API through the `plaid` SDK (axios underneath), built once per configuration, and the
 * one mapping from a failed Plaid call to erm3's wire errors. Secrets never leave here: the client
 * id and secret travel only as request headers, and a failure is logged and answered with Plaid's
 * error code, type and request id only — never the axios error, whose config holds the headers
 * and the request body (with the access token).
 */
import type { PlaidApi } from 'plaid'
import type { PlaidConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import type { ServiceContext } from '../context.ts'

const clients = new WeakMap<PlaidConfig, PlaidApi>()

const PLAID_NOT_CONFIGURED =
  'Brokerage holdings (Plaid) are not configured on this server: the operator must set PLAID_CLIENT_ID, ' +
  'PLAID_SECRET, PLAID_ENV (sandbox or production) and ERM3_PLAID_TOKEN_KEYS (see the README, "Brokerage holdings with Plaid")'

export function plaidConfig(ctx: Pick<ServiceContext, 'config'>): PlaidConfig {
  const cfg = ctx.config.plaid
  if (!cfg) throw new AppError('UNAVAILABLE', PLAID_NOT_CONFIGURED)
  return cfg
}

/** The SDK is loaded on first use: an instance without Plaid never pays its start-up. */
export async function plaidClient(cfg: PlaidConfig): Promise<PlaidApi> {
  let c = clients.get(cfg)
  if (!c) {
    const { Configuration, PlaidApi, PlaidEnvironments } = await import('plaid')
    c =
      clients.get(cfg) ??
      new PlaidApi(
        new Configuration({
          basePath: cfg.apiBase ?? PlaidEnvironments[cfg.env],
          baseOptions: {
            headers: { 'PLAID-CLIENT-ID': cfg.clientId, 'PLAID-SECRET': cfg.secret },
            timeout: cfg.timeoutMs,
          },
        }),
      )
    clients.set(cfg, c)
  }
  return c
}

/** What Plaid says about a failed call: its documented error object, or the transport failure. */
export interface PlaidFailure {
  status: number | null
  errorType: string | null
  errorCode: string | null
  displayMessage: string | null
  requestId: string | null
  timedOut: boolean
}

export function plaidFailure(err: unknown): PlaidFailure {
  const e = err as {
    code?: string
    response?: { status?: number; data?: Record<string, unknown> }
  }
  const data = e?.response?.data ?? {}
  const s = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : null)
  return {
    status: typeof e?.response?.status === 'number' ? e.response.status : null,
    errorType: s('error_type'),
    errorCode: s('error_code'),
    displayMessage: s('display_message'),
    requestId: s('request_id'),
    timedOut: e?.code === 'ECONNABORTED' || e?.code === 'ETIMEDOUT',
  }
}

/** Plaid item errors the user fixes by going through Link again (update mode). */
const RELINK_CODES: ReadonlySet<string> = new Set([
  'ITEM_LOGIN_REQUIRED',
  'PENDING_EXPIRATION',
  'PENDING_DISCONNECT',
  'ITEM_LOCKED',
  'ITEM_NOT_FOUND',
  'INVALID_ACCESS_TOKEN',
  'ACCESS_NOT_GRANTED',
  'USER_PERMISSION_REVOKED',
])

/** Plaid answered that the item holds nothing this product reads: not a failure of the call. */
export const EMPTY_ITEM_CODES: ReadonlySet<string> = new Set([
  'NO_INVESTMENT_ACCOUNTS',
  'NO_ACCOUNTS',
  'PRODUCTS_NOT_SUPPORTED',
])

/**
 * A failed Plaid call as an erm3 error: a timeout → 504, Plaid down or refusing this server → 502,
 * a user's item to re-link → 409 (with `item_id`); never a 500.
 */
export function plaidError(
  ctx: Pick<ServiceContext, 'log'>,
  err: unknown,
  what: string,
  item: { id: string; institutionName: string | null } | null = null,
): AppError {
  if (err instanceof AppError) return err
  const f = plaidFailure(err)
  ctx.log.warn(
    {
      plaid: { call: what, status: f.status, error_type: f.errorType, error_code: f.errorCode },
      plaid_request_id: f.requestId,
      item_id: item?.id ?? null,
    },
    'plaid call failed',
  )
  const extra = { plaid_error_code: f.errorCode, plaid_request_id: f.requestId }
  if (f.timedOut)
    return new AppError('UPSTREAM_TIMEOUT', `Plaid did not answer ${what} in time; try again later`, {
      extra,
    })
  if (item && f.errorCode && RELINK_CODES.has(f.errorCode)) {
    const at = item.institutionName ? ` at ${item.institutionName}` : ''
    return new AppError(
      'RELINK_REQUIRED',
      `The brokerage connection ${item.id}${at} needs to be re-linked (Plaid: ${f.errorCode}): sign in to the dashboard ` +
        `and re-link it (POST /plaid/link-token with {"item_id": "${item.id}"} opens Plaid Link in update mode), or remove it`,
      { extra: { ...extra, item_id: item.id } },
    )
  }
  if (f.status === null)
    return new AppError('UPSTREAM_ERROR', `Plaid could not be reached for ${what}; try again later`, {
      extra,
    })
  if (f.errorType === 'INVALID_INPUT' && what === 'the public token exchange')
    return new AppError('INVALID_REQUEST', `Plaid rejected the public_token (${f.errorCode ?? 'invalid'})`, {
      fields: [{ field: 'public_token', message: 'not a valid, unexpired Plaid Link public token' }],
      extra,
    })
  const why =
    f.errorType === 'INVALID_REQUEST' || f.errorType === 'INVALID_INPUT' || f.errorCode === 'INVALID_API_KEYS'
      ? 'Plaid refused this server (the operator should check PLAID_CLIENT_ID, PLAID_SECRET and PLAID_ENV)'
      : (f.displayMessage ?? 'Plaid or the institution failed')
  return new AppError('UPSTREAM_ERROR', `${what}: ${why} (${f.errorCode ?? `HTTP ${f.status}`})`, { extra })
}
