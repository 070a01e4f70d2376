/** discovery operations (issue 6): filled in by the engineer who owns them. */
export const DISCOVERY_OPS = {} as const
