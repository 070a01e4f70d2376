/**
 * The PostgreSQL account store's money statements. Each is one statement, so it is atomic on its
 * own; row locks on `accounts` serialise reserves of one account across every API node.
 */
import {
  BALANCE_LOW_CTES,
  LOW_BALANCE_RETURNING,
  LOW_BALANCE_SET,
  TOPPED_UP_CTE,
} from './webhooks-postgres.ts'

/**
 * Reserves only if balance − reserved ≥ amount and, under a monthly spend cap, this month's settled
 * spend + reserved + amount ≤ cap ($5: the UTC month of the reserve); the reservation row exists iff
 * the UPDATE matched. Both conditions are checked under the account's row lock.
 */
export const RESERVE = `WITH acct AS (
    UPDATE accounts SET reserved_micros = reserved_micros + $2
    WHERE id = $1 AND balance_micros - reserved_micros >= $2
      AND (spend_cap_micros IS NULL OR spend_cap_micros >=
        reserved_micros + $2 + CASE WHEN spend_month = $5 THEN spend_month_micros ELSE 0 END)
    RETURNING id
  )
  INSERT INTO reservations (id, account_id, amount_micros, created_at)
  SELECT $3, id, $2, $4 FROM acct
  RETURNING id`

const SETTLE_INPUT = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
      $8::int[], $9::text[], $10::text[])
      AS t(res_id, charge, ledger_id, request_id, capability, key_id, created_at, month, paid_key, paid_as_of)
  )`

/**
 * What both settle statements do once `claimed` holds the charges they may make (with the account,
 * `freed`: what leaves `reserved_micros`, and the input columns): the debit rows, the balance, the
 * reserved sum and the month's spend move together, the low-balance alert fires once; returns the
 * ledger id and account of every charge claimed. A charge naming a paid request key records it
 * (paid_requests) in the same statement, so the record exists iff the debit does.
 */
const SETTLE_TAIL = `, paid AS (
    INSERT INTO paid_requests (account_id, request_key, data_as_of, created_at)
    SELECT account_id, paid_key, paid_as_of, created_at FROM claimed WHERE paid_key IS NOT NULL AND charge > 0
    ON CONFLICT DO NOTHING
  ), debits AS (
    INSERT INTO ledger (id, account_id, kind, amount_micros, request_id, capability, key_id, created_at)
    SELECT ledger_id, account_id, 'debit', -charge, request_id, capability, key_id, created_at
    FROM claimed WHERE charge > 0
  ), totals AS (
    SELECT account_id, SUM(charge)::bigint AS charge, SUM(freed)::bigint AS freed,
      MAX(month) AS month, MAX(created_at) AS at
    FROM claimed GROUP BY account_id
  ), moved AS (
    UPDATE accounts a
    SET balance_micros = a.balance_micros - t.charge, reserved_micros = a.reserved_micros - t.freed,
      spend_month_micros = CASE WHEN a.spend_month = t.month THEN a.spend_month_micros + t.charge
        WHEN a.spend_month > t.month THEN a.spend_month_micros ELSE t.charge END,
      spend_month = GREATEST(a.spend_month, t.month),
      ${LOW_BALANCE_SET}
    FROM totals t WHERE a.id = t.account_id
    ${LOW_BALANCE_RETURNING}
  )${BALANCE_LOW_CTES}
  SELECT ledger_id, account_id FROM claimed`

/**
 * Settles a batch of reservations (group commit). Deleting the reservation row is the claim: a
 * reservation already settled, released or reconciled claims nothing, so it can never be charged
 * twice. A charge above its reservation claims nothing either (the caller reports the error).
 * Parameters are parallel arrays: reservation ids, charges, ledger ids, request ids, capabilities,
 * key ids, times, UTC months (the spend cap's measure moves with the balance).
 */
export const SETTLE_BATCH = `${SETTLE_INPUT}, claimed AS (
    DELETE FROM reservations r USING input i
    WHERE r.id = i.res_id AND i.charge <= r.amount_micros
    RETURNING r.account_id, r.amount_micros AS freed, i.*
  )${SETTLE_TAIL}`

/**
 * Settles a batch of charges drawn on reservation leases (postgres-leases.ts), same parameters
 * with lease ids for reservation ids (one lease may carry many charges). A lease is drawn down by
 * the sum of its charges, all or none, only if it still holds that much; the lease stays (its
 * node returns the rest), so `freed` is the charge itself. A lease released or reconciled away
 * claims nothing.
 */
export const SETTLE_LEASE_BATCH = `${SETTLE_INPUT}, per_lease AS (
    SELECT res_id, SUM(charge)::bigint AS total FROM input GROUP BY res_id
  ), drawn AS (
    UPDATE reservations r SET amount_micros = r.amount_micros - p.total
    FROM per_lease p WHERE r.id = p.res_id AND r.amount_micros >= p.total
    RETURNING r.id, r.account_id
  ), claimed AS (
    SELECT d.account_id, i.charge AS freed, i.* FROM input i JOIN drawn d ON d.id = i.res_id
  )${SETTLE_TAIL}`

/**
 * Takes a reservation lease, or grows one ($4: its id; the row is created or added to): at least
 * $2, at most max($2, $3), and no more than a quarter of what the account has free (balance −
 * reserved, and under a spend cap, the cap's room) beyond $2 — so one node's lease leaves most of
 * a small balance to the others. Checked under the account's row lock, like RESERVE. A grown
 * lease's row is locked before the account's (the order the settles lock them in, so the two
 * cannot deadlock). Returns the amount taken, or no row when even $2 does not fit.
 */
export const LEASE_TAKE = `WITH l AS (
    SELECT id FROM reservations WHERE id = $4 FOR UPDATE
  ), a AS (
    SELECT id, balance_micros - reserved_micros AS free,
      CASE WHEN spend_cap_micros IS NULL THEN NULL ELSE spend_cap_micros - reserved_micros -
        CASE WHEN spend_month = $6 THEN spend_month_micros ELSE 0 END END AS room
    FROM accounts WHERE id = $1 AND (SELECT count(*) FROM l) >= 0 FOR UPDATE
  ), t AS (
    SELECT id, GREATEST($2::bigint, LEAST($3::bigint, LEAST(free, COALESCE(room, free)) / 4)) AS take
    FROM a WHERE free >= $2 AND (room IS NULL OR room >= $2)
  ), acct AS (
    UPDATE accounts SET reserved_micros = accounts.reserved_micros + t.take FROM t WHERE accounts.id = t.id
    RETURNING t.take
  ), lease AS (
    INSERT INTO reservations (id, account_id, amount_micros, created_at) SELECT $4, $1, take, $5 FROM acct
    ON CONFLICT (id) DO UPDATE SET amount_micros = reservations.amount_micros + EXCLUDED.amount_micros
    RETURNING id
  )
  SELECT take FROM acct WHERE EXISTS (SELECT 1 FROM lease)`

/** Hands $2 of a lease back to its account, if the lease still holds that much. */
export const LEASE_SHRINK = `WITH r AS (
    UPDATE reservations SET amount_micros = amount_micros - $2 WHERE id = $1 AND amount_micros >= $2
    RETURNING account_id
  )
  UPDATE accounts a SET reserved_micros = a.reserved_micros - $2 FROM r WHERE a.id = r.account_id
  RETURNING a.id`

/** Keeps a long-lived lease from looking abandoned to reconcile (RELEASE_OLD goes by created_at). */
export const LEASE_TOUCH = 'UPDATE reservations SET created_at = $2 WHERE id = $1'

/** Takes the account rows of a multi-account batch in id order, so two nodes' batches cannot deadlock. */
export const LOCK_BATCH_ACCOUNTS = `SELECT a.id FROM accounts a
  WHERE a.id IN (SELECT account_id FROM reservations WHERE id = ANY($1::text[]))
  ORDER BY a.id FOR UPDATE OF a`

export const RELEASE = `WITH r AS (DELETE FROM reservations WHERE id = $1 RETURNING account_id, amount_micros)
  UPDATE accounts a SET reserved_micros = a.reserved_micros - r.amount_micros FROM r WHERE a.id = r.account_id`

/**
 * Adds money unless (account, reference) already has an entry; returns the new row or nothing.
 * Re-arms the low-balance alert and, for a top-up, enqueues balance.topped_up ($8: its event id).
 */
export const CREDIT = `WITH ins AS (
    INSERT INTO ledger (id, account_id, kind, amount_micros, reference, note, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (account_id, reference) WHERE reference IS NOT NULL DO NOTHING
    RETURNING id
  ), upd AS (
    UPDATE accounts SET balance_micros = balance_micros + $4, low_balance_armed = 1
    WHERE id = $2 AND EXISTS (SELECT 1 FROM ins)
    RETURNING id, balance_micros
  )${TOPPED_UP_CTE}
  SELECT id FROM ins`

/** Releases reservations older than the cutoff (their node crashed or forgot them). */
export const RELEASE_OLD = `WITH r AS (
    DELETE FROM reservations WHERE created_at < $1 RETURNING account_id, amount_micros
  ), t AS (
    SELECT account_id, SUM(amount_micros)::bigint AS amount, COUNT(*)::bigint AS n FROM r GROUP BY account_id
  ), u AS (
    UPDATE accounts a SET reserved_micros = a.reserved_micros - t.amount FROM t WHERE a.id = t.account_id
  )
  SELECT COALESCE(SUM(n), 0)::bigint AS released FROM t`

/** Accounts whose cached balance or reserved sum disagrees with the ledger / reservations. */
export const MISMATCHED = `SELECT a.id FROM accounts a
  LEFT JOIN (SELECT account_id, SUM(amount_micros) AS s FROM ledger GROUP BY account_id) l ON l.account_id = a.id
  LEFT JOIN (SELECT account_id, SUM(amount_micros) AS s FROM reservations GROUP BY account_id) r
    ON r.account_id = a.id
  WHERE a.balance_micros <> COALESCE(l.s, 0) OR a.reserved_micros <> COALESCE(r.s, 0)`

/**
 * Re-derives one account under its row lock. Every ledger insert and reservation change also
 * updates this row, so with the lock held no such change can commit between the sums and the fix.
 */
export const LOCK_ACCOUNT =
  'SELECT balance_micros AS b, reserved_micros AS r FROM accounts WHERE id = $1 FOR UPDATE'
export const ACCOUNT_TRUTH = `SELECT
  (SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE account_id = $1)::bigint AS b,
  (SELECT COALESCE(SUM(amount_micros), 0) FROM reservations WHERE account_id = $1)::bigint AS r`

/** Whether an account paid for a request key (docs/decisions/money.md, "pay once"). */
export const HAS_PAID = 'SELECT 1 FROM paid_requests WHERE account_id = $1 AND request_key = $2'

/** Deletes the paid-request records of data older than $1; one row returned per record deleted. */
export const PRUNE_PAID = 'DELETE FROM paid_requests WHERE data_as_of < $1 RETURNING 1 AS n'
