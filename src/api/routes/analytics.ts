import type { Capability } from '../../contract/pricing.ts'
import type { ServiceContext } from '../../services/context.ts'
import type { RouteTable } from './types.ts'

export function analyticsRoutes(_ctx: ServiceContext, _priced: (opId: string) => Capability): RouteTable {
  return {}
}
