/**
 * Webhooks and balance alerts on the embedded SQLite store. One process owns the file, and every
 * write runs under BEGIN IMMEDIATE, so claims never overlap; leases still matter across a crash
 * (a claimed delivery whose dispatcher died is claimed again after its lease, same delivery id).
 *
 * `hooks` are called by the account store inside its own transactions (key created or revoked, a
 * credit, a debit): the event rows commit or roll back with the change.
 */
import type Database from 'better-sqlite3'
import { newId } from '../../platform/ids.ts'
import {
  type AttemptRow,
  attemptValues,
  type ClaimedRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  DUE_WHERE,
  disabledEmailValues,
  disableReason,
  enqueueEmailSql,
  enqueueForAccountSql,
  enqueueModelSql,
  type FailingRow,
  FINISH_DELIVERY,
  type FinishedRow,
  finishValues,
  INSERT_ATTEMPT,
  PURGE_ATTEMPTS,
  PURGE_DELIVERIES,
  SUBSCRIPTION_COLUMNS,
  SUBSCRIPTION_DISABLE,
  SUBSCRIPTION_FAILED,
  SUBSCRIPTION_OK,
  type SubscriptionRow,
  subscriptionUpdate,
  toAttempt,
  toClaimed,
  toDelivery,
  toSubscription,
  UPDATE_SUBSCRIPTION,
} from './webhooks-sql.ts'
import type { OutboxEvent, WebhookStore } from './webhooks-types.ts'

export interface SqliteWebhookHooks {
  /** Fans an account event out to its subscriptions (and, with `email`, the account's address). */
  enqueue(
    accountId: string,
    event: OutboxEvent,
    data: Record<string, unknown>,
    now: number,
    email?: boolean,
  ): void
  /** After a debit of `chargeMicros` was applied: fires balance.low when it crossed the armed threshold. */
  afterDebit(accountId: string, chargeMicros: number, now: number): void
  /** After a credit was applied: re-arms the balance alert. */
  rearm(accountId: string): void
}

export function createSqliteWebhooks(db: Database.Database): {
  store: WebhookStore
  hooks: SqliteWebhookHooks
} {
  let prepared: ReturnType<typeof prepare> | null = null
  const s = () => {
    prepared ??= prepare(db)
    return prepared
  }
  const hooks = transactionHooks(s)
  const c: WebhookContext = { db, s }
  const store: WebhookStore = {
    ...subscriptionMethods(c),
    ...deliveryMethods(c),
    ...dispatchMethods(c),
    ...outboxUpkeep(c),
    ...balanceAlertMethods(c),
  }
  return { store, hooks }
}

/** The connection and its prepared statements (made on first use). */
interface WebhookContext {
  db: Database.Database
  s: () => ReturnType<typeof prepare>
}

/** The hooks the account store calls inside its own transactions (see SqliteWebhookHooks). */
function transactionHooks(s: () => ReturnType<typeof prepare>): SqliteWebhookHooks {
  const enqueue: SqliteWebhookHooks['enqueue'] = (accountId, event, data, now, email = false) => {
    const eventId = newId('evt', now)
    const json = JSON.stringify(data)
    s().enqueue.run(eventId, event, json, now, now, now, accountId, event)
    if (email) s().enqueueEmail.run(eventId, event, json, now, now, now, accountId)
  }

  return {
    enqueue,
    afterDebit(accountId, chargeMicros, now) {
      const crossed = s().cross.get(accountId, chargeMicros)
      if (crossed)
        enqueue(
          accountId,
          'balance.low',
          { balance_micros: crossed.b, threshold_micros: crossed.t },
          now,
          true,
        )
    },
    rearm(accountId) {
      s().rearm.run(accountId)
    },
  }
}

/** An account's subscriptions: created, listed, changed (re-enabling clears the failure state), deleted. */
function subscriptionMethods({ db, s }: WebhookContext) {
  return {
    async createSubscription(n) {
      s().insertSub.run(n.id, n.accountId, n.url, n.events.join(','), n.secretEnc, n.createdAt, n.createdAt)
      return toSubscription(s().sub.get(n.accountId, n.id) as SubscriptionRow)
    },
    async listSubscriptions(accountId) {
      return s().subs.all(accountId).map(toSubscription)
    },
    async getSubscription(accountId, id) {
      const r = s().sub.get(accountId, id)
      return r ? toSubscription(r) : null
    },
    async subscriptionSecret(accountId, id) {
      return s().secret.get(accountId, id)?.secret_enc ?? null
    },
    async updateSubscription(accountId, id, p) {
      return db
        .transaction(() => {
          const cur = s().sub.get(accountId, id)
          if (!cur) return null
          db.prepare(UPDATE_SUBSCRIPTION).run(...subscriptionUpdate(cur, p, id, accountId))
          return toSubscription(s().sub.get(accountId, id) as SubscriptionRow)
        })
        .immediate()
    },
    async deleteSubscription(accountId, id) {
      return db
        .transaction(() => {
          if (!s().sub.get(accountId, id)) return false
          db.prepare(
            'DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE subscription_id = ?)',
          ).run(id)
          db.prepare('DELETE FROM webhook_deliveries WHERE subscription_id = ?').run(id)
          db.prepare('DELETE FROM webhook_subscriptions WHERE id = ? AND account_id = ?').run(id, accountId)
          return true
        })
        .immediate()
    },
  } satisfies Partial<WebhookStore>
}

/** An account's view of the outbox: a test delivery, the recent deliveries with their log, a redelivery. */
function deliveryMethods({ db, s }: WebhookContext) {
  return {
    async enqueueEvent(accountId, event, data, now) {
      return s().enqueue.run(newId('evt', now), event, JSON.stringify(data), now, now, now, accountId, event)
        .changes
    },
    async enqueueTest(accountId, id, now) {
      if (!s().sub.get(accountId, id)) return null
      const did = newId('whd', now)
      s().insertDelivery.run(
        did,
        accountId,
        id,
        'webhook',
        newId('evt', now),
        'webhook.test',
        JSON.stringify({ subscription_id: id }),
        now,
        now,
        now,
        null,
      )
      return toDelivery(s().delivery.get(did) as DeliveryRow)
    },
    async listDeliveries(accountId, subscriptionId, limit) {
      const rows = s().deliveries.all(accountId, subscriptionId, limit)
      if (rows.length === 0) return []
      const ids = rows.map((r) => r.id)
      const attempts = db
        .prepare<string[], AttemptRow>(
          `SELECT * FROM webhook_attempts WHERE delivery_id IN (${ids.map(() => '?').join(', ')})
           ORDER BY delivery_id, attempt`,
        )
        .all(...ids)
      return rows.map((r) => ({
        ...toDelivery(r),
        log: attempts.filter((a) => a.delivery_id === r.id).map(toAttempt),
      }))
    },
    async redeliver(accountId, subscriptionId, deliveryId, now) {
      const orig = s().deliveryOf.get(deliveryId, accountId, subscriptionId)
      if (!orig) return null
      const did = newId('whd', now)
      s().insertDelivery.run(
        did,
        accountId,
        subscriptionId,
        'webhook',
        orig.event_id,
        orig.event,
        orig.data,
        now,
        now,
        orig.event_at,
        orig.id,
      )
      return toDelivery(s().delivery.get(did) as DeliveryRow)
    },
  } satisfies Partial<WebhookStore>
}

/**
 * The dispatcher's side: claim due deliveries under a lease, then record each attempt's outcome
 * (a subscription failing for too long is disabled, and the account told by e-mail).
 */
function dispatchMethods({ db, s }: WebhookContext) {
  return {
    async claim(owner, now, leaseMs, limit, emailOnly = false) {
      return db
        .transaction(() => {
          const due = s().due.all(now, now, emailOnly ? 1 : 0, limit)
          return due.map((r) => toClaimed(s().lease.get(owner, now + leaseMs, r.id) as ClaimedRow))
        })
        .immediate()
    },
    async finish(o) {
      return db
        .transaction(() => {
          const row = s().finish.get(...finishValues(o))
          if (!row) return { recorded: false, disabled: false }
          s().attempt.run(...attemptValues(o))
          if (row.channel !== 'webhook' || row.subscription_id === null)
            return { recorded: true, disabled: false }
          if (o.ok) {
            s().subOk.run(row.subscription_id)
            return { recorded: true, disabled: false }
          }
          const sub = s().subFailed.get(o.startedAt, row.subscription_id)
          const reason = disableReason(sub, o)
          if (!sub || reason === null) return { recorded: true, disabled: false }
          s().subDisable.run(reason, o.now, row.subscription_id)
          s().enqueueEmail.run(...disabledEmailValues(row, sub, reason, o.now))
          return { recorded: true, disabled: true }
        })
        .immediate()
    },
  } satisfies Partial<WebhookStore>
}

/** model.updated, once per build, and the purge of old finished deliveries. */
function outboxUpkeep({ db, s }: WebhookContext) {
  return {
    async recordModelBuild(dataAsOf, modelVersion, now) {
      return db
        .transaction(() => {
          const { changes } = s().insertBuild.run(dataAsOf, modelVersion, now)
          if (changes === 0) return false
          s().enqueueModel.run(
            newId('evt', now),
            JSON.stringify({ data_as_of: dataAsOf, model_version: modelVersion }),
            now,
            now,
            now,
          )
          return true
        })
        .immediate()
    },

    async purgeDeliveries(before) {
      return db
        .transaction(() => {
          db.prepare(PURGE_ATTEMPTS).run(before)
          return db.prepare(PURGE_DELIVERIES).run(before).changes
        })
        .immediate()
    },
  } satisfies Partial<WebhookStore>
}

/** The low-balance alert's threshold and whether it is armed. */
function balanceAlertMethods({ s }: WebhookContext) {
  return {
    async balanceAlert(accountId) {
      const r = s().alert.get(accountId)
      return r ? { thresholdMicros: r.t, armed: r.a === 1 } : null
    },
    async setBalanceAlert(accountId, thresholdMicros) {
      const r = s().setAlert.get(thresholdMicros, accountId)
      return r ? { thresholdMicros: r.t, armed: r.a === 1 } : null
    },
  } satisfies Partial<WebhookStore>
}

function prepare(db: Database.Database) {
  return {
    enqueue: db.prepare(enqueueForAccountSql('sqlite')),
    enqueueEmail: db.prepare(enqueueEmailSql('sqlite')),
    enqueueModel: db.prepare(enqueueModelSql('sqlite')),
    // The balance was already moved: before = after + charge. Disarms when it crossed.
    cross: db.prepare<[string, number], { b: number; t: number }>(
      `UPDATE accounts SET low_balance_armed = 0
       WHERE id = ? AND low_balance_armed = 1 AND balance_micros < low_balance_micros
         AND balance_micros + ? >= low_balance_micros
       RETURNING balance_micros AS b, low_balance_micros AS t`,
    ),
    rearm: db.prepare<[string]>(
      'UPDATE accounts SET low_balance_armed = 1 WHERE id = ? AND low_balance_armed = 0',
    ),
    alert: db.prepare<[string], { t: number; a: number }>(
      'SELECT low_balance_micros AS t, low_balance_armed AS a FROM accounts WHERE id = ?',
    ),
    setAlert: db.prepare<[number, string], { t: number; a: number }>(
      `UPDATE accounts SET low_balance_micros = ?, low_balance_armed = 1 WHERE id = ?
       RETURNING low_balance_micros AS t, low_balance_armed AS a`,
    ),
    insertSub: db.prepare(
      `INSERT INTO webhook_subscriptions (id, account_id, url, events, secret_enc, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    sub: db.prepare<[string, string], SubscriptionRow>(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE account_id = ? AND id = ?`,
    ),
    subs: db.prepare<[string], SubscriptionRow>(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE account_id = ? ORDER BY created_at, id`,
    ),
    secret: db.prepare<[string, string], { secret_enc: string }>(
      'SELECT secret_enc FROM webhook_subscriptions WHERE account_id = ? AND id = ?',
    ),
    insertDelivery: db.prepare(
      `INSERT INTO webhook_deliveries (id, account_id, subscription_id, channel, event_id, event, data, status,
         next_attempt_at, created_at, event_at, redelivery_of)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
    ),
    delivery: db.prepare<[string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.id = ?`,
    ),
    deliveryOf: db.prepare<[string, string, string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
       WHERE d.id = ? AND d.account_id = ? AND d.subscription_id = ? AND d.channel = 'webhook'`,
    ),
    deliveries: db.prepare<[string, string, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
       WHERE d.account_id = ? AND d.subscription_id = ? ORDER BY d.created_at DESC, d.id DESC LIMIT ?`,
    ),
    due: db.prepare<[number, number, number, number], { id: string }>(
      `SELECT d.id FROM webhook_deliveries d WHERE ${DUE_WHERE} ORDER BY d.next_attempt_at, d.id LIMIT ?`,
    ),
    lease: db.prepare<[string, number, string], ClaimedRow>(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, lease_owner = ?, lease_until = ?
       WHERE id = ?
       RETURNING ${DELIVERY_COLUMNS.replace(/d\./g, '')}, lease_until,
         (SELECT s.url FROM webhook_subscriptions s WHERE s.id = subscription_id) AS url,
         (SELECT s.secret_enc FROM webhook_subscriptions s WHERE s.id = subscription_id) AS secret_enc,
         (SELECT a.email FROM accounts a WHERE a.id = webhook_deliveries.account_id) AS email`,
    ),
    finish: db.prepare<unknown[], FinishedRow>(FINISH_DELIVERY),
    attempt: db.prepare(INSERT_ATTEMPT),
    subOk: db.prepare(SUBSCRIPTION_OK),
    subFailed: db.prepare<[number, string], FailingRow>(SUBSCRIPTION_FAILED),
    subDisable: db.prepare(SUBSCRIPTION_DISABLE),
    insertBuild: db.prepare(
      'INSERT INTO model_builds (data_as_of, model_version, first_served_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
    ),
  }
}
