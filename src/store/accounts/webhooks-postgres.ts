/**
 * Webhooks and balance alerts on PostgreSQL. Several API nodes share the outbox: a claim locks due
 * rows with `FOR UPDATE SKIP LOCKED` and leases them (lease_owner, lease_until) in the same
 * statement, so two dispatchers never claim the same attempt; a dispatcher that dies mid-delivery
 * loses its lease, and the delivery is claimed again (same delivery id, next attempt number).
 *
 * The event inserts of the account store's own statements (key created or revoked, a top-up, a
 * crossing debit) are the SQL fragments below: they run inside those statements, so the event
 * commits or rolls back with the change.
 */
import type pg from 'pg'
import { newId } from '../../platform/ids.ts'
import type { Tx } from '../oauth/postgres.ts'
import { KEY_COLUMNS } from './rows.ts'
import {
  type AttemptRow,
  attemptValues,
  type ClaimedRow,
  DELIVERY_COLUMNS,
  DELIVERY_INSERT_COLUMNS,
  type DeliveryRow,
  DUE_WHERE,
  deliveryIdSql,
  disabledEmailValues,
  disableReason,
  enqueueEmailSql,
  enqueueModelSql,
  type FailingRow,
  FINISH_DELIVERY,
  type FinishedRow,
  finishValues,
  hasEventSql,
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
  toPg,
  toSubscription,
  UPDATE_SUBSCRIPTION,
} from './webhooks-sql.ts'
import type { WebhookStore } from './webhooks-types.ts'

const NEW_ID = deliveryIdSql('postgres')

/** An account event raised by the service (enqueueEvent): $1 event id, $2 event, $3 data, $4 now, $5 account. */
const ENQUEUE_EVENT = `INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
  SELECT ${NEW_ID}, s.account_id, s.id, 'webhook', $1, $2::text, $3, 'pending', $4, $4, $4
  FROM webhook_subscriptions s
  WHERE s.account_id = $5 AND s.enabled = 1 AND ${hasEventSql('postgres', '$2::text')}`

/** insertKey with key.created: parameters $1–$11 of the key, $12 the event id. */
export const INSERT_KEY_WITH_EVENT = `WITH k AS (
    INSERT INTO api_keys (id, account_id, kind, environment, prefix, name, tier, hash, created_at, expires_at, client_id)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    RETURNING ${KEY_COLUMNS}
  )
  INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
  SELECT ${NEW_ID}, k.account_id, s.id, 'webhook', $12, 'key.created',
    json_build_object('key_id', k.id, 'name', k.name, 'prefix', k.prefix, 'environment', k.environment,
      'kind', k.kind, 'created_at', k.created_at, 'expires_at', k.expires_at)::text,
    'pending', k.created_at, k.created_at, k.created_at
  FROM k JOIN webhook_subscriptions s ON s.account_id = k.account_id
  WHERE k.client_id IS NULL AND s.enabled = 1 AND ${hasEventSql('postgres', "'key.created'")}`

/** revokeKey with key.revoked (only when this call revoked it): $1 key id, $2 time, $3 event id. */
export const REVOKE_KEY_WITH_EVENT = `WITH rv AS (
    UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL
    RETURNING ${KEY_COLUMNS}
  ), ev AS (
    INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${NEW_ID}, rv.account_id, s.id, 'webhook', $3, 'key.revoked',
      json_build_object('key_id', rv.id, 'name', rv.name, 'prefix', rv.prefix, 'environment', rv.environment,
        'revoked_at', rv.revoked_at)::text,
      'pending', $2::bigint, $2::bigint, $2::bigint
    FROM rv JOIN webhook_subscriptions s ON s.account_id = rv.account_id
    WHERE rv.client_id IS NULL AND s.enabled = 1 AND ${hasEventSql('postgres', "'key.revoked'")}
  )
  SELECT ${KEY_COLUMNS} FROM rv
  UNION ALL
  SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM rv)`

/**
 * balance.topped_up inside the credit statement: `upd` (the balance update) must return the new
 * balance. Parameters of the credit: $1 ledger id, $2 account, $3 kind, $4 amount, $5 reference,
 * $7 time; $8 the event id.
 */
export const TOPPED_UP_CTE = `, topped AS (
    INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${NEW_ID}, s.account_id, s.id, 'webhook', $8, 'balance.topped_up',
      json_build_object('ledger_id', $1::text, 'amount_micros', $4::bigint, 'balance_micros', upd.balance_micros,
        'reference', $5::text)::text,
      'pending', $7::bigint, $7::bigint, $7::bigint
    FROM upd JOIN webhook_subscriptions s ON s.account_id = upd.id
    WHERE $3::text = 'topup' AND s.enabled = 1 AND ${hasEventSql('postgres', "'balance.topped_up'")}
  )`

/**
 * balance.low inside the settle statement: `moved` (the accounts update) returns id, the new
 * balance, threshold and armed flag, the batch's charge and time. A crossing (before ≥ threshold >
 * after, while armed) disarmed the account in `moved`; it fans out to the subscriptions and the
 * account's e-mail, one event per crossing.
 */
export const BALANCE_LOW_CTES = `, crossed AS (
    SELECT m.id AS account_id, m.balance_micros AS b, m.low_balance_micros AS lim, m.at,
      'evt_' || replace(gen_random_uuid()::text, '-', '') AS event_id
    FROM moved m
    WHERE m.low_balance_armed = 0 AND m.balance_micros < m.low_balance_micros
      AND m.balance_micros + m.charge >= m.low_balance_micros
  ), alerts AS (
    INSERT INTO webhook_deliveries (${DELIVERY_INSERT_COLUMNS})
    SELECT ${NEW_ID}, x.account_id, s.id, 'webhook', x.event_id, 'balance.low',
      json_build_object('balance_micros', x.b, 'threshold_micros', x.lim)::text, 'pending', x.at, x.at, x.at
    FROM crossed x JOIN webhook_subscriptions s ON s.account_id = x.account_id
    WHERE s.enabled = 1 AND ${hasEventSql('postgres', "'balance.low'")}
    UNION ALL
    SELECT ${NEW_ID}, x.account_id, NULL, 'email', x.event_id, 'balance.low',
      json_build_object('balance_micros', x.b, 'threshold_micros', x.lim)::text, 'pending', x.at, x.at, x.at
    FROM crossed x JOIN accounts a ON a.id = x.account_id WHERE a.email IS NOT NULL
  )`

/** The SET item and RETURNING list `moved` needs for BALANCE_LOW_CTES (totals `t` has charge and at). */
export const LOW_BALANCE_SET = `low_balance_armed = CASE WHEN a.low_balance_armed = 1
        AND a.balance_micros >= a.low_balance_micros AND a.balance_micros - t.charge < a.low_balance_micros
        THEN 0 ELSE a.low_balance_armed END`
export const LOW_BALANCE_RETURNING =
  'RETURNING a.id, a.balance_micros, a.low_balance_micros, a.low_balance_armed, t.charge, t.at'

const CLAIM = `WITH due AS (
    SELECT d.id, d.subscription_id FROM webhook_deliveries d WHERE ${DUE_WHERE}
    ORDER BY d.next_attempt_at, d.id LIMIT ?
    FOR UPDATE OF d SKIP LOCKED
  )
  UPDATE webhook_deliveries d SET attempts = d.attempts + 1, lease_owner = ?, lease_until = ?
  FROM due
  LEFT JOIN webhook_subscriptions s ON s.id = due.subscription_id
  WHERE d.id = due.id
  RETURNING ${DELIVERY_COLUMNS}, d.lease_until, s.url, s.secret_enc,
    (SELECT a.email FROM accounts a WHERE a.id = d.account_id) AS email`

export function createPostgresWebhooks(pool: pg.Pool, tx: Tx): WebhookStore {
  const c = webhookContext(pool, tx)
  return {
    ...subscriptionMethods(c),
    ...deliveryMethods(c),
    ...dispatchMethods(c),
    ...outboxUpkeep(c),
    ...balanceAlertMethods(c),
  }
}

type WebhookContext = ReturnType<typeof webhookContext>

/** The pool and the reads and writes the method groups below share. */
function webhookContext(pool: pg.Pool, tx: Tx) {
  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
    (await pool.query<R>(text, values)).rows
  const getSub = async (accountId: string, id: string, c?: pg.PoolClient) => {
    const sql = `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE account_id = $1 AND id = $2`
    const rows = c
      ? (await c.query<SubscriptionRow>(sql, [accountId, id])).rows
      : await q<SubscriptionRow>(sql, [accountId, id])
    return rows[0] ?? null
  }
  const insertDelivery = async (c: pg.PoolClient | pg.Pool, v: unknown[]) => {
    await c.query(
      `INSERT INTO webhook_deliveries (id, account_id, subscription_id, channel, event_id, event, data, status,
         next_attempt_at, created_at, event_at, redelivery_of)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11)`,
      v,
    )
    const [r] = (
      await c.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.id = $1`, [
        v[0],
      ])
    ).rows
    return toDelivery(r as DeliveryRow)
  }

  return { pool, tx, q, getSub, insertDelivery }
}

/** An account's subscriptions: created, listed, changed (re-enabling clears the failure state), deleted. */
function subscriptionMethods({ tx, q, getSub }: WebhookContext) {
  return {
    async createSubscription(n) {
      await q(
        `INSERT INTO webhook_subscriptions (id, account_id, url, events, secret_enc, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)`,
        [n.id, n.accountId, n.url, n.events.join(','), n.secretEnc, n.createdAt],
      )
      return toSubscription((await getSub(n.accountId, n.id)) as SubscriptionRow)
    },
    async listSubscriptions(accountId) {
      const rows = await q<SubscriptionRow>(
        `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE account_id = $1 ORDER BY created_at, id`,
        [accountId],
      )
      return rows.map(toSubscription)
    },
    async getSubscription(accountId, id) {
      const r = await getSub(accountId, id)
      return r ? toSubscription(r) : null
    },
    async subscriptionSecret(accountId, id) {
      const [r] = await q<{ secret_enc: string }>(
        'SELECT secret_enc FROM webhook_subscriptions WHERE account_id = $1 AND id = $2',
        [accountId, id],
      )
      return r?.secret_enc ?? null
    },
    async updateSubscription(accountId, id, p) {
      return tx(async (c) => {
        const [cur] = (
          await c.query<SubscriptionRow>(
            `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE account_id = $1 AND id = $2 FOR UPDATE`,
            [accountId, id],
          )
        ).rows
        if (!cur) return null
        await c.query(toPg(UPDATE_SUBSCRIPTION), subscriptionUpdate(cur, p, id, accountId))
        return toSubscription((await getSub(accountId, id, c)) as SubscriptionRow)
      })
    },
    async deleteSubscription(accountId, id) {
      return tx(async (c) => {
        if (!(await getSub(accountId, id, c))) return false
        await c.query(
          'DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE subscription_id = $1)',
          [id],
        )
        await c.query('DELETE FROM webhook_deliveries WHERE subscription_id = $1', [id])
        await c.query('DELETE FROM webhook_subscriptions WHERE id = $1 AND account_id = $2', [id, accountId])
        return true
      })
    },
  } satisfies Partial<WebhookStore>
}

/** An account's view of the outbox: a test delivery, the recent deliveries with their log, a redelivery. */
function deliveryMethods({ pool, q, getSub, insertDelivery }: WebhookContext) {
  return {
    async enqueueEvent(accountId, event, data, now) {
      const r = await pool.query(ENQUEUE_EVENT, [
        newId('evt', now),
        event,
        JSON.stringify(data),
        now,
        accountId,
      ])
      return r.rowCount ?? 0
    },
    async enqueueTest(accountId, id, now) {
      if (!(await getSub(accountId, id))) return null
      return insertDelivery(pool, [
        newId('whd', now),
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
      ])
    },
    async listDeliveries(accountId, subscriptionId, limit) {
      const rows = await q<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
         WHERE d.account_id = $1 AND d.subscription_id = $2 ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
        [accountId, subscriptionId, limit],
      )
      if (rows.length === 0) return []
      const attempts = await q<AttemptRow>(
        'SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt',
        [rows.map((r) => r.id)],
      )
      return rows.map((r) => ({
        ...toDelivery(r),
        log: attempts.filter((a) => a.delivery_id === r.id).map(toAttempt),
      }))
    },
    async redeliver(accountId, subscriptionId, deliveryId, now) {
      const [orig] = await q<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
         WHERE d.id = $1 AND d.account_id = $2 AND d.subscription_id = $3 AND d.channel = 'webhook'`,
        [deliveryId, accountId, subscriptionId],
      )
      if (!orig) return null
      return insertDelivery(pool, [
        newId('whd', now),
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
      ])
    },
  } satisfies Partial<WebhookStore>
}

/**
 * The dispatcher's side: claim due deliveries under a lease, then record each attempt's outcome
 * (a subscription failing for too long is disabled, and the account told by e-mail).
 */
function dispatchMethods({ tx, q }: WebhookContext) {
  return {
    async claim(owner, now, leaseMs, limit, emailOnly = false) {
      const rows = await q<ClaimedRow>(toPg(CLAIM), [
        now,
        now,
        emailOnly ? 1 : 0,
        limit,
        owner,
        now + leaseMs,
      ])
      return rows.map(toClaimed)
    },
    async finish(o) {
      return tx(async (c) => {
        const [row] = (await c.query<FinishedRow>(toPg(FINISH_DELIVERY), finishValues(o))).rows
        if (!row) return { recorded: false, disabled: false }
        await c.query(toPg(INSERT_ATTEMPT), attemptValues(o))
        if (row.channel !== 'webhook' || row.subscription_id === null)
          return { recorded: true, disabled: false }
        if (o.ok) {
          await c.query(toPg(SUBSCRIPTION_OK), [row.subscription_id])
          return { recorded: true, disabled: false }
        }
        const [sub] = (
          await c.query<FailingRow>(toPg(SUBSCRIPTION_FAILED), [o.startedAt, row.subscription_id])
        ).rows
        const reason = disableReason(sub, o)
        if (!sub || reason === null) return { recorded: true, disabled: false }
        await c.query(toPg(SUBSCRIPTION_DISABLE), [reason, o.now, row.subscription_id])
        await c.query(toPg(enqueueEmailSql('postgres')), disabledEmailValues(row, sub, reason, o.now))
        return { recorded: true, disabled: true }
      })
    },
  } satisfies Partial<WebhookStore>
}

/** model.updated, once per build across nodes, and the purge of old finished deliveries. */
function outboxUpkeep({ tx }: WebhookContext) {
  return {
    async recordModelBuild(dataAsOf, modelVersion, now) {
      return tx(async (c) => {
        const ins = await c.query(
          'INSERT INTO model_builds (data_as_of, model_version, first_served_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
          [dataAsOf, modelVersion, now],
        )
        if (ins.rowCount !== 1) return false
        await c.query(toPg(enqueueModelSql('postgres')), [
          newId('evt', now),
          JSON.stringify({ data_as_of: dataAsOf, model_version: modelVersion }),
          now,
          now,
          now,
        ])
        return true
      })
    },

    async purgeDeliveries(before) {
      return tx(async (c) => {
        await c.query(toPg(PURGE_ATTEMPTS), [before])
        return (await c.query(toPg(PURGE_DELIVERIES), [before])).rowCount ?? 0
      })
    },
  } satisfies Partial<WebhookStore>
}

/** The low-balance alert's threshold and whether it is armed. */
function balanceAlertMethods({ q }: WebhookContext) {
  return {
    async balanceAlert(accountId) {
      const [r] = await q<{ t: number; a: number }>(
        'SELECT low_balance_micros AS t, low_balance_armed AS a FROM accounts WHERE id = $1',
        [accountId],
      )
      return r ? { thresholdMicros: Number(r.t), armed: Number(r.a) === 1 } : null
    },
    async setBalanceAlert(accountId, thresholdMicros) {
      const [r] = await q<{ t: number; a: number }>(
        `UPDATE accounts SET low_balance_micros = $1, low_balance_armed = 1 WHERE id = $2
         RETURNING low_balance_micros AS t, low_balance_armed AS a`,
        [thresholdMicros, accountId],
      )
      return r ? { thresholdMicros: Number(r.t), armed: Number(r.a) === 1 } : null
    },
  } satisfies Partial<WebhookStore>
}
