/** history operations (issue 5): filled in by the engineer who owns them. */
export const HISTORY_OPS = {} as const
