import type { Static, TSchema } from 'typebox'
import type { Operation } from './operation.ts'
import { estimate, getBalance, getHealth, getInvoices, getPricing } from './ops/account.ts'
import { ANALYTICS_OPS } from './ops/analytics.ts'
import {
  confirmLogin,
  dashboardKey,
  getSession,
  login,
  loginCallback,
  logout,
  logoutAll,
  provision,
  provisionFree,
} from './ops/auth.ts'
import { BILLING_OPS } from './ops/billing.ts'
import { CHAT_OPS } from './ops/chat.ts'
import { CORRELATION_OPS } from './ops/correlation.ts'
import { CROSS_OPS } from './ops/cross.ts'
import { DISCOVERY_OPS } from './ops/discovery.ts'
import {
  getApiReference,
  getApiReferenceAsset,
  getBillingDocs,
  getErrorDocs,
  getLanding,
  getMethodologyDocs,
  getMethodologyMarkdown,
  getModelQualityDocs,
  getOpenApi,
  getPrometheusMetrics,
} from './ops/docs.ts'
import { FUNDAMENTALS_OPS } from './ops/fundamentals.ts'
import { HISTORY_OPS } from './ops/history.ts'
import { MCP_OPS } from './ops/mcp.ts'
import { getMetrics } from './ops/metrics.ts'
import { OAUTH_OPS } from './ops/oauth.ts'
import { OAUTH_GRANT_OPS } from './ops/oauth-grants.ts'
import { PLAID_OPS } from './ops/plaid.ts'
import { SELF_SERVICE_OPS } from './ops/self-service.ts'
import { SNAPSHOT_OPS } from './ops/snapshot.ts'
import { WEB_OPS } from './ops/web.ts'
import { WEBHOOK_OPS } from './ops/webhooks.ts'

/** Every operation the server exposes, by id. The route table, the OpenAPI document and the client derive from it. */
export const OPS = {
  getHealth,
  getPricing,
  estimate,
  getBalance,
  getInvoices,
  login,
  loginCallback,
  confirmLogin,
  provision,
  provisionFree,
  getSession,
  dashboardKey,
  logout,
  logoutAll,
  ...BILLING_OPS,
  getMetrics,
  ...HISTORY_OPS,
  ...ANALYTICS_OPS,
  ...CROSS_OPS,
  ...CORRELATION_OPS,
  ...FUNDAMENTALS_OPS,
  ...SNAPSHOT_OPS,
  ...CHAT_OPS,
  ...PLAID_OPS,
  ...OAUTH_OPS,
  ...WEBHOOK_OPS,
  ...SELF_SERVICE_OPS,
  ...OAUTH_GRANT_OPS,
  ...DISCOVERY_OPS,
  ...WEB_OPS,
  ...MCP_OPS,
  getOpenApi,
  getErrorDocs,
  getMethodologyDocs,
  getMethodologyMarkdown,
  getModelQualityDocs,
  getBillingDocs,
  getPrometheusMetrics,
  getLanding,
  getApiReference,
  getApiReferenceAsset,
} as const

export type OperationId = keyof typeof OPS

/**
 * The validated value of one part of a request to operation K: the static type of the operation's
 * schema for it (`unknown` when it declares none; `| undefined` for an optional body). What a
 * handler reads from `req.params`, `req.query` and `req.body`.
 */
export type RequestPart<
  K extends OperationId,
  P extends 'params' | 'querystring' | 'body',
> = (typeof OPS)[K] extends {
  [k in P]: infer S extends TSchema
}
  ? S extends { '~optional': true }
    ? Static<S> | undefined
    : Static<S>
  : unknown

export const OPERATIONS: readonly Operation[] = Object.values(OPS)

export function operationById(id: string): Operation | undefined {
  return OPERATIONS.find((o) => o.id === id)
}
