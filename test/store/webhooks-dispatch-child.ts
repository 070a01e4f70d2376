/**
 * A dispatcher in its own process, for the SIGKILL test (webhooks-outbox.test.ts): opens the
 * account store named by argv (sqlite <path> | postgres <url> <schema>), runs a dispatcher with a
 * short lease, and prints "ready". The parent kills it with SIGKILL in the middle of a delivery.
 */
import { createLogger } from '../../src/platform/logger.ts'
import type { ServiceContext } from '../../src/services/context.ts'
import { createDispatcher } from '../../src/services/webhooks/dispatcher.ts'
import { createPostgresAccountStore } from '../../src/store/accounts/postgres.ts'
import { createSqliteAccountStore } from '../../src/store/accounts/sqlite.ts'

const [kind, where, schema] = process.argv.slice(2)
const webhookKey = process.env.ERM3_WEBHOOK_KEY as string
const accounts =
  kind === 'sqlite'
    ? createSqliteAccountStore(where as string)
    : createPostgresAccountStore(where as string, { schema })
const ctx = {
  accounts,
  secrets: { pepper: 'x'.repeat(32), sessionSecret: 'x'.repeat(32), webhookKey },
  now: Date.now,
  log: createLogger('silent'),
  mailer: { kind: 'outbox', send: async () => undefined },
  // The receivers listen on loopback: the development opt-in.
  config: { publicUrl: 'http://erm3.test', topUpUrl: null, webhookAllowLoopback: true },
} as unknown as ServiceContext
const d = createDispatcher(ctx, { leaseMs: 1500, timeoutMs: 60_000, pollMs: 50, owner: 'child' })
d.start()
// The dispatcher's timer does not hold the process open (a server's listener does): this does.
setInterval(() => undefined, 60_000)
process.stdout.write('ready\n')
