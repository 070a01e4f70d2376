/** oauth operations (issue 6): filled in by the engineer who owns them. */
export const OAUTH_OPS = {} as const
