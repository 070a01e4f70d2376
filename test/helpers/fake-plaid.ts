/**
 * A local fake of the Plaid API on loopback for the real `plaid` SDK (PLAID_API_BASE in erm3's
 * config). It implements only what erm3 calls — POST /link/token/create,
 * /item/public_token/exchange, /investments/holdings/get, /item/remove — with payloads shaped like
 * Plaid's (node_modules/plaid/dist/api.d.ts: LinkTokenCreateResponse,
 * ItemPublicTokenExchangeResponse, InvestmentsHoldingsGetResponse, ItemRemoveResponse; errors are
 * PlaidError objects with HTTP 400). Every request must carry PLAID-CLIENT-ID and PLAID-SECRET.
 *
 * Knobs: `mode` 'down' answers 500 INTERNAL_SERVER_ERROR, 'hang' never answers; an item can be put
 * in ITEM_LOGIN_REQUIRED; `portfolio` is the book a newly exchanged item holds.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedPlaidRequest {
  path: string
  headers: IncomingMessage['headers']
  body: Record<string, unknown>
}

/** One position of the fake book: a security (by Plaid type) in one of the two accounts. */
export interface FakePosition {
  account: 0 | 1
  ticker: string | null
  type: 'equity' | 'etf' | 'cash' | 'mutual fund' | 'derivative'
  name: string
  quantity: number
  price: number
  costBasis?: number | null
}

export interface FakeItem {
  itemId: string
  accessToken: string
  institutionId: string
  state: 'ok' | 'login_required'
  accounts: Record<string, unknown>[]
  holdings: Record<string, unknown>[]
  securities: Record<string, unknown>[]
}

export interface FakePlaid {
  url: string
  clientId: string
  secret: string
  requests: RecordedPlaidRequest[]
  /** By access token. */
  items: Map<string, FakeItem>
  /** Access tokens /item/remove was called with. */
  removed: string[]
  /** The book a newly exchanged item holds. */
  portfolio: FakePosition[]
  mode: 'ok' | 'down' | 'hang'
  /** What Plaid Link would hand the browser after a successful link. */
  publicToken(): string
  itemByItemId(itemId: string): FakeItem | undefined
  close(): Promise<void>
}

const requestId = () => randomBytes(8).toString('base64url').slice(0, 10)

function plaidError(
  res: ServerResponse,
  status: number,
  error_type: string,
  error_code: string,
  error_message: string,
  display_message: string | null = null,
) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(
    JSON.stringify({
      error_type,
      error_code,
      error_message,
      display_message,
      request_id: requestId(),
      causes: [],
      status,
      documentation_url: `https://plaid.com/docs/errors/#${error_code.toLowerCase()}`,
      suggested_action: null,
    }),
  )
}

function ok(res: ServerResponse, body: Record<string, unknown>) {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ ...body, request_id: requestId() }))
}

function account(i: number, value: number) {
  const names = [
    ['Plaid IRA', 'Plaid Traditional IRA', 'ira', '4444'],
    ['Plaid Brokerage', 'Plaid Individual Brokerage', 'brokerage', '5555'],
  ][i] as string[]
  return {
    account_id: randomBytes(12).toString('base64url'),
    balances: {
      available: Math.round(value * 0.1 * 100) / 100,
      current: Math.round(value * 100) / 100,
      iso_currency_code: 'USD',
      limit: null,
      unofficial_currency_code: null,
    },
    mask: names[3],
    name: names[0],
    official_name: names[1],
    subtype: names[2],
    type: 'investment',
  }
}

function buildItem(book: FakePosition[]): FakeItem {
  const securities = new Map<string, Record<string, unknown>>()
  const value = [0, 0]
  for (const p of book) value[p.account] = (value[p.account] as number) + p.quantity * p.price
  const accounts = [account(0, value[0] as number), account(1, value[1] as number)]
  const holdings = book.map((p) => {
    const key = `${p.type}:${p.ticker ?? p.name}`
    let sec = securities.get(key)
    if (!sec) {
      sec = {
        security_id: randomBytes(16).toString('base64url'),
        isin: null,
        cusip: null,
        sedol: null,
        institution_security_id: null,
        institution_id: null,
        proxy_security_id: null,
        name: p.name,
        ticker_symbol: p.ticker,
        is_cash_equivalent: p.type === 'cash',
        type: p.type,
        subtype: p.type === 'equity' ? 'common stock' : p.type === 'cash' ? 'cash' : null,
        close_price: p.price,
        close_price_as_of: '2021-12-31',
        update_datetime: null,
        iso_currency_code: 'USD',
        unofficial_currency_code: null,
        market_identifier_code: p.type === 'cash' ? null : 'XNAS',
        sector: null,
        industry: null,
        option_contract: null,
        fixed_income: null,
      }
      securities.set(key, sec)
    }
    return {
      account_id: (accounts[p.account] as { account_id: string }).account_id,
      security_id: sec.security_id,
      cost_basis: p.costBasis === undefined ? p.price * 0.9 : p.costBasis,
      institution_price: p.price,
      institution_price_as_of: '2021-12-31',
      institution_price_datetime: null,
      institution_value: Math.round(p.quantity * p.price * 100) / 100,
      iso_currency_code: 'USD',
      quantity: p.quantity,
      unofficial_currency_code: null,
      vested_quantity: null,
      vested_value: null,
    }
  })
  return {
    itemId: randomBytes(18).toString('base64url'),
    accessToken: `access-sandbox-${randomUUID()}`,
    institutionId: 'ins_115616',
    state: 'ok',
    accounts,
    holdings,
    securities: [...securities.values()],
  }
}

function itemJson(i: FakeItem) {
  return {
    item_id: i.itemId,
    institution_id: i.institutionId,
    institution_name: 'Vanguard',
    webhook: '',
    error: null,
    available_products: ['balance'],
    billed_products: ['investments'],
    products: ['investments'],
    consented_products: ['investments'],
    consent_expiration_time: null,
    update_type: 'background',
  }
}

export async function startFakePlaid(opts: { clientId?: string; secret?: string } = {}): Promise<FakePlaid> {
  const clientId = opts.clientId ?? `client_${randomBytes(8).toString('hex')}`
  const secret = opts.secret ?? `secret_${randomBytes(15).toString('hex')}`
  const publicTokens = new Set<string>()
  const hanging: ServerResponse[] = []
  const fake: FakePlaid = {
    url: '',
    clientId,
    secret,
    requests: [],
    items: new Map(),
    removed: [],
    portfolio: [],
    mode: 'ok',
    publicToken() {
      const t = `public-sandbox-${randomUUID()}`
      publicTokens.add(t)
      return t
    },
    itemByItemId(itemId) {
      return [...fake.items.values()].find((i) => i.itemId === itemId)
    },
    close: async () => {
      for (const r of hanging) r.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
  const route = (path: string, body: Record<string, unknown>, res: ServerResponse) => {
    const token = typeof body.access_token === 'string' ? body.access_token : null
    const item = token ? fake.items.get(token) : undefined
    const needItem = () => {
      if (item) return true
      plaidError(
        res,
        400,
        'INVALID_INPUT',
        'INVALID_ACCESS_TOKEN',
        'provided access token is in an invalid format',
      )
      return false
    }
    switch (path) {
      case '/link/token/create':
        return ok(res, {
          link_token: `link-sandbox-${randomUUID()}`,
          expiration: new Date(Date.now() + 4 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        })
      case '/item/public_token/exchange': {
        const pt = String(body.public_token ?? '')
        if (!publicTokens.delete(pt))
          return plaidError(
            res,
            400,
            'INVALID_INPUT',
            'INVALID_PUBLIC_TOKEN',
            'provided public token is expired. Public tokens expire 30 minutes after creation',
          )
        const it = buildItem(fake.portfolio)
        fake.items.set(it.accessToken, it)
        return ok(res, { access_token: it.accessToken, item_id: it.itemId })
      }
      case '/investments/holdings/get':
        if (!needItem() || !item) return
        if (item.state === 'login_required')
          return plaidError(
            res,
            400,
            'ITEM_ERROR',
            'ITEM_LOGIN_REQUIRED',
            "the login details of this item have changed (credentials, MFA, or required user action) and a user login is required to update this information. use Link's update mode to restore the item to a good state",
            'The login details of this account have changed. Please log in again.',
          )
        return ok(res, {
          accounts: item.accounts,
          holdings: item.holdings,
          securities: item.securities,
          item: itemJson(item),
        })
      case '/item/remove':
        if (!needItem() || !token) return
        fake.removed.push(token)
        fake.items.delete(token)
        return ok(res, {})
      default:
        return plaidError(res, 404, 'INVALID_REQUEST', 'NOT_FOUND', `unknown path ${path}`)
    }
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
      } catch {
        return plaidError(res, 400, 'INVALID_REQUEST', 'INVALID_BODY', 'body could not be parsed as JSON')
      }
      const path = (req.url ?? '/').split('?')[0] as string
      fake.requests.push({ path, headers: req.headers, body })
      if (fake.mode === 'hang') {
        hanging.push(res)
        return
      }
      if (fake.mode === 'down')
        return plaidError(
          res,
          500,
          'API_ERROR',
          'INTERNAL_SERVER_ERROR',
          'an unexpected error occurred',
          'Something went wrong. Please try again later.',
        )
      if (req.headers['plaid-client-id'] !== clientId || req.headers['plaid-secret'] !== secret)
        return plaidError(
          res,
          400,
          'INVALID_INPUT',
          'INVALID_API_KEYS',
          'invalid client_id or secret provided',
        )
      route(path, body, res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return fake
}
