/** analytics operations (issue 5): filled in by the engineer who owns them. */
export const ANALYTICS_OPS = {} as const
