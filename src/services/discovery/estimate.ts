import { openApiPath } from '../../contract/operation.ts'
import { OPERATIONS, operationById } from '../../contract/operations.ts'
import { type Capability, chargeMicros, microsToUsd } from '../../contract/pricing.ts'
import type { ModelStore } from '../../engine/model-store/reader.ts'
import { AppError } from '../../platform/errors.ts'
import { servedCapabilities } from '../billing/views.ts'
import { estimateChat } from '../chat/estimate.ts'
import { historySize } from './estimate-size.ts'

/*
 * POST /estimate: what one call of any served operation would cost. Here, above billing and chat,
 * because a chat's estimate is chat's own (chat/estimate.ts: prompt and tool definitions count).
 */

/** Finds the capability of `operation` given as an operation id, a capability id or "METHOD /path". */
function findCapability(operation: string): Capability | null {
  const text = operation.trim()
  const m = /^(GET|POST)\s+(\S+)$/i.exec(text)
  const served = servedCapabilities()
  if (m) {
    const [method, path] = [(m[1] as string).toUpperCase(), m[2] as string]
    return (
      served.find((c) => {
        const op = operationById(c.operationId)
        if (!op || op.method !== method) return false
        const re = new RegExp(`^${openApiPath(op.path).replace(/\{[^}]+\}/g, '[^/]+')}$`)
        return re.test(path)
      }) ?? null
    )
  }
  return served.find((c) => c.id === text || c.operationId === text) ?? null
}

function positionsOf(params: Record<string, unknown>): number {
  const t = params.tickers ?? params.portfolio
  return Array.isArray(t) ? t.length : 1
}

/** `store`: the live build, whose calendar sizes a history operation's answer (null: not sized). */
export function estimateCost(
  operation: string,
  params: Record<string, unknown> = {},
  store: ModelStore | null = null,
) {
  const c = findCapability(operation)
  if (!c) {
    const op = OPERATIONS.find(
      (o) => o.id === operation || `${o.method} ${openApiPath(o.path)}` === operation,
    )
    if (op) {
      return {
        estimated_cost_usd: 0,
        capability: op.id,
        pricing_model: 'per_request' as const,
        note: 'This operation is free.',
      }
    }
    throw new AppError(
      'NOT_FOUND',
      `Unknown operation ${JSON.stringify(operation)}: see GET /pricing for capability ids`,
    )
  }
  if (c.model === 'per_token') return estimateChat(c, params)
  const positions = positionsOf(params)
  if (c.model === 'per_position' && positions > 100)
    throw new AppError('TOO_MANY_TICKERS', `At most 100 tickers per call, got ${positions}`)
  const cost = chargeMicros(c, positions)
  const op = operationById(c.operationId)
  const size = store && op ? historySize(store, op, params) : null
  return {
    estimated_cost_usd: microsToUsd(cost),
    capability: c.id,
    pricing_model: c.model,
    note:
      c.model === 'per_position'
        ? `${microsToUsd(c.unitMicros)} USD per successful position${c.minChargeMicros ? `, minimum ${microsToUsd(c.minChargeMicros)} USD per call` : ''}; failed positions are not charged; cached responses are free.`
        : c.batchUnitMicros !== null
          ? `${microsToUsd(c.unitMicros)} USD for one ticker, ${microsToUsd(c.batchUnitMicros)} USD per batch call (tickers); errors and cached responses are free.`
          : 'Charged per successful call; errors and cached responses are free.',
    ...(c.model === 'per_position' ? { estimated_rows: positions } : {}),
    ...(size ?? {}),
    unit_cost_usd: microsToUsd(c.unitMicros),
    ...(c.minChargeMicros !== null ? { min_charge: microsToUsd(c.minChargeMicros) } : {}),
  }
}
