import type { ServiceContext } from '../../services/context.ts'
import type { RouteTable } from './types.ts'

export function discoveryRoutes(_ctx: ServiceContext): RouteTable {
  return {}
}
