import type { Operation } from './operation.ts'
import { estimate, getBalance, getHealth, getInvoices, getPricing } from './ops/account.ts'
import { login, loginCallback, provision, provisionFree } from './ops/auth.ts'
import { getErrorDocs, getMethodologyDocs, getOpenApi, getPrometheusMetrics } from './ops/docs.ts'
import { getMetrics } from './ops/metrics.ts'

/** Every operation the server exposes. The route table and the OpenAPI document are both built from this list. */
export const OPERATIONS: readonly Operation[] = [
  getHealth,
  getPricing,
  estimate,
  getBalance,
  getInvoices,
  login,
  loginCallback,
  provision,
  provisionFree,
  getMetrics,
  getOpenApi,
  getErrorDocs,
  getMethodologyDocs,
  getPrometheusMetrics,
]

export function operationById(id: string): Operation | undefined {
  return OPERATIONS.find((o) => o.id === id)
}
