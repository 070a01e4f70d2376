import type { UpdateOutcome } from '../engine/update/types.ts'
import type { ServerConfig } from '../platform/config.ts'
import type { Logger } from '../platform/logger.ts'
import type { Mailer } from '../platform/mail.ts'
import type { Secrets } from '../platform/secrets.ts'
import type { AccountStore } from '../store/accounts/types.ts'
import type { LimitsBackend } from '../store/limits/types.ts'
import type { ModelRegistry } from './models.ts'

/**
 * Everything a use case needs, built once by a composition root (src/main). Services see only
 * interfaces; which database, limiter or mailer sits behind them is main's choice.
 */
export interface ServiceContext {
  config: ServerConfig
  secrets: Secrets
  accounts: AccountStore
  limits: LimitsBackend
  models: ModelRegistry
  mailer: Mailer
  log: Logger
  /** Epoch ms; injectable so tests can move time (expiry, rate refill). */
  now: () => number
  /** The live store's last update, as the reload poll last read it (absent: never read). */
  dataStatus?: DataStatus
}

/** Filled by services/updates/data-status.ts on each poll; /health reads it. */
export interface DataStatus {
  lastUpdate: UpdateOutcome | null
  /** Why status/update.json could not be read at the last poll (null: it was, or is absent). */
  readError: string | null
  /** This node runs the daily update (`--update-at`). */
  scheduled: boolean
}
