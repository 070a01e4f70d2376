import { AppError } from '../../platform/errors.ts'
import type { RateRule } from '../../store/limits/types.ts'
import type { ServiceContext } from '../context.ts'

const DAY_MS = 86_400_000

/** Bucket names of the daily cap: the UTC day follows (one bucket per day, shared by every node). */
const FREE_CAP_BUCKET = 'free-provision:'

/** The UTC day of `ms`, `YYYY-MM-DD`. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/**
 * The daily cap as a token bucket of the shared limiter (Redis across nodes): one bucket per UTC
 * day holding `cap` tokens that refills one token a day. A day's bucket is used for less than a
 * day, so it never refills while it is in use: at most `cap` free keys per UTC day, whatever the
 * number of nodes. (A used bucket lingers in the limiter until it would be full again, a few bytes
 * a day.)
 */
const capRule = (cap: number): RateRule => ({ limit: 1, periodMs: DAY_MS, burst: cap })

export interface FreeProvisionCap {
  /**
   * Takes one of today's free keys; throws FORBIDDEN when free keys are off (cap 0) and
   * UNAVAILABLE with Retry-After to the next UTC midnight when today's are all given.
   */
  take(): Promise<void>
}

/**
 * The global daily cap on `POST /auth/provision-free` (ERM3_FREE_PROVISION_DAILY_CAP). Take it
 * after every other check of the request (its per-address limit, its body), so only a request
 * that would get a key spends one. The first refusal of a UTC day on this node logs one warning
 * for the operator; `refused` is called on every refusal (a Prometheus counter).
 */
export function freeProvisionCap(ctx: ServiceContext, refused: () => void = () => {}): FreeProvisionCap {
  const cap = ctx.config.freeProvisionDailyCap
  let warnedFor: string | null = null
  return {
    async take() {
      if (cap === 0)
        throw new AppError(
          'FORBIDDEN',
          'This instance gives no free keys; sign in with POST /auth/login and provision a key with POST /auth/provision',
        )
      const now = ctx.now()
      const day = utcDay(now)
      const d = await ctx.limits.rate.take(FREE_CAP_BUCKET + day, capRule(cap), now)
      if (d.allowed) return
      refused()
      if (warnedFor !== day) {
        warnedFor = day
        ctx.log.warn(
          { day, cap, variable: 'ERM3_FREE_PROVISION_DAILY_CAP' },
          'free provisioning: the daily cap is reached; POST /auth/provision-free answers 503 until 00:00 UTC',
        )
      }
      const midnight = (Math.floor(now / DAY_MS) + 1) * DAY_MS
      throw new AppError(
        'UNAVAILABLE',
        `Today's free keys are all given out (${cap} per UTC day on this instance); try again after 00:00 UTC, or sign in with POST /auth/login`,
        { retryAfterSeconds: Math.max(1, Math.ceil((midnight - now) / 1000)) },
      )
    },
  }
}
