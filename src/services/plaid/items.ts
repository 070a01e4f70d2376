/**
 * Linking brokerage accounts: the signed-in account asks for a Link token, its browser
 * runs Plaid Link, and the public token Link returns is exchanged here for an access token, which
 * is stored only encrypted (token-crypto.ts). Items are listed and removed (Plaid /item/remove,
 * then the stored token is deleted). Everything is scoped to the session's account: another
 * account's item is "not found".
 */
import type { CountryCode, Products } from 'plaid'
import { AppError } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { PlaidItemRecord } from '../../store/accounts/plaid-types.ts'
import type { ServiceContext } from '../context.ts'
import type { Session } from '../identity/session.ts'
import { plaidClient, plaidConfig, plaidError } from './client.ts'
import { openToken, sealToken } from './token-crypto.ts'

export interface PlaidItemView {
  id: string
  plaid_item_id: string
  institution_id: string | null
  institution_name: string | null
  created_at: string
  last_error: string | null
}

const itemView = (i: PlaidItemRecord): PlaidItemView => ({
  id: i.id,
  plaid_item_id: i.itemId,
  institution_id: i.institutionId,
  institution_name: i.institutionName,
  created_at: new Date(i.createdAt).toISOString(),
  last_error: i.lastError,
})

const notFound = (id: string) =>
  new AppError('NOT_FOUND', `No linked brokerage connection ${id} on this account`)

/**
 * The access token of an item, re-encrypted under the current key when it was sealed under an
 * older one (rotation happens on read).
 */
export async function accessToken(ctx: ServiceContext, item: PlaidItemRecord): Promise<string> {
  const cfg = plaidConfig(ctx)
  const sealed = { ciphertext: item.tokenCiphertext, keyId: item.tokenKeyId }
  const { token, resealed } = openToken(cfg.tokenKeys, item.id, sealed)
  if (resealed) {
    const wrote = await ctx.accounts
      .plaid()
      .rekeyToken(item.id, item.tokenKeyId, resealed.ciphertext, resealed.keyId)
    if (wrote) ctx.log.info({ item_id: item.id, key_id: resealed.keyId }, 'plaid token re-encrypted')
  }
  return token
}

/** A Link token for the account (investments), or in update mode for one of its items (re-link). */
export async function createLinkToken(ctx: ServiceContext, s: Session, relinkItemId: string | null) {
  const cfg = plaidConfig(ctx)
  let token: string | null = null
  if (relinkItemId !== null) {
    const item = await ctx.accounts.plaid().getItem(s.accountId, relinkItemId)
    if (!item) throw notFound(relinkItemId)
    token = await accessToken(ctx, item)
  }
  try {
    const r = await (await plaidClient(cfg)).linkTokenCreate({
      client_name: 'erm3',
      language: 'en',
      // The SDK's enum values, spelled out (the SDK itself is loaded on first use: ./client.ts).
      country_codes: ['US' as CountryCode.Us],
      user: { client_user_id: s.accountId },
      ...(token === null ? { products: ['investments' as Products.Investments] } : { access_token: token }),
    })
    return { link_token: r.data.link_token, expiration: r.data.expiration, update_mode: token !== null }
  } catch (err) {
    throw plaidError(ctx, err, 'the Link token request')
  }
}

export async function exchangePublicToken(
  ctx: ServiceContext,
  s: Session,
  body: { public_token: string; institution_id?: string; institution_name?: string },
): Promise<PlaidItemView> {
  const cfg = plaidConfig(ctx)
  let exchanged: { access_token: string; item_id: string }
  try {
    exchanged = (await (await plaidClient(cfg)).itemPublicTokenExchange({ public_token: body.public_token }))
      .data
  } catch (err) {
    throw plaidError(ctx, err, 'the public token exchange')
  }
  const now = ctx.now()
  const id = newId('pli', now)
  const sealed = sealToken(cfg.tokenKeys, id, exchanged.access_token)
  const item: PlaidItemRecord = {
    id,
    accountId: s.accountId,
    itemId: exchanged.item_id,
    institutionId: body.institution_id ?? null,
    institutionName: body.institution_name ?? null,
    tokenCiphertext: sealed.ciphertext,
    tokenKeyId: sealed.keyId,
    createdAt: now,
    lastError: null,
  }
  if (!(await ctx.accounts.plaid().insertItem(item)))
    throw new AppError('CONFLICT', 'This brokerage connection (Plaid item) is linked already')
  return itemView(item)
}

export async function listItems(ctx: ServiceContext, s: Session) {
  plaidConfig(ctx)
  const items = await ctx.accounts.plaid().listItems(s.accountId)
  return { items: items.map(itemView) }
}

/** Plaid /item/remove (the access token stops working), then the stored token is deleted. */
export async function removeItem(ctx: ServiceContext, s: Session, id: string) {
  const cfg = plaidConfig(ctx)
  const item = await ctx.accounts.plaid().getItem(s.accountId, id)
  if (!item) throw notFound(id)
  const token = await accessToken(ctx, item)
  try {
    await (await plaidClient(cfg)).itemRemove({ access_token: token })
  } catch (err) {
    // An item Plaid no longer knows is removed all the same; anything else keeps it (retry later).
    const code = (err as { response?: { data?: { error_code?: unknown } } })?.response?.data?.error_code
    if (code !== 'ITEM_NOT_FOUND' && code !== 'INVALID_ACCESS_TOKEN')
      throw plaidError(ctx, err, 'the item removal')
  }
  await ctx.accounts.plaid().deleteItem(s.accountId, id)
  return { id, deleted: true as const }
}
