import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { CorporateAction, DailyBar } from '../../src/engine/sources/types.ts'
import { afterClose, newSessions } from '../../src/engine/update/days.ts'
import { DEFAULT_GATE, type GateSecurity, type GateSettings, gateDay } from '../../src/engine/update/gate.ts'

const DAY = '2024-03-15'
const PREV = '2024-03-14'
const bar = (close: number, o: Partial<DailyBar> = {}): DailyBar => ({
  date: DAY,
  close,
  adjClose: close,
  volume: 5000,
  splitFactor: 1,
  dividend: 0,
  ...o,
})
const sec = (symbol: string, o: Partial<GateSecurity> = {}): GateSecurity => ({
  symbol,
  ticker: symbol,
  isStock: symbol !== 'SPY',
  previous: { ...bar(100), date: PREV, volume: 4000 },
  expected: true,
  ...o,
})
/** SPY and 40 stocks S0..S39, all priced at 100 the day before. */
const universe = [sec('SPY'), ...Array.from({ length: 40 }, (_, i) => sec(`S${i}`))]
const goodBars = () => new Map(universe.map((s) => [s.symbol, [bar(101)]]))

function gate(
  bars: Map<string, DailyBar[]>,
  o: {
    settings?: Partial<GateSettings>
    actions?: Map<string, CorporateAction[]>
    off?: { symbol: string; date: string }[]
  } = {},
) {
  return gateDay(
    { day: DAY, bars, offCalendar: o.off ?? [], actions: o.actions ?? new Map() },
    universe,
    'SPY',
    { ...DEFAULT_GATE, ...o.settings },
  )
}

describe('quality gate', () => {
  test('a clean day passes whole', () => {
    const r = gate(goodBars())
    assert.equal(r.quarantine, null)
    assert.deepEqual(r.findings, [])
    assert.equal(r.accepted.size, universe.length)
  })

  const perStock: [string, (b: Map<string, DailyBar[]>) => void, string][] = [
    ['missing', (b) => b.delete('S3'), 'missing'],
    ['zero price', (b) => b.set('S3', [bar(0)]), 'nonpositive'],
    ['negative price', (b) => b.set('S3', [bar(-2)]), 'nonpositive'],
    ['repeated close and volume', (b) => b.set('S3', [bar(100, { volume: 4000 })]), 'stale'],
    ['a 70 % jump', (b) => b.set('S3', [bar(170)]), 'large_move'],
    ['two different bars', (b) => b.set('S3', [bar(101), bar(102)]), 'duplicate_date'],
  ]
  for (const [what, spoil, kind] of perStock) {
    test(`${what}: dropped under drop, the day quarantined under quarantine`, () => {
      const b = goodBars()
      spoil(b)
      const r = gate(b)
      assert.equal(r.quarantine, null)
      assert.deepEqual(
        r.findings.map((f) => [f.kind, f.symbol, f.action]),
        [[kind, 'S3', 'dropped']],
      )
      assert.equal(r.accepted.has('S3'), false)
      assert.equal(r.accepted.size, universe.length - 1)
      const q = gate(b, { settings: { policy: 'quarantine' } })
      assert.match(q.quarantine ?? '', /policy quarantine: 1 security/)
      assert.equal(q.accepted.size, 0)
      assert.deepEqual(
        q.findings.map((f) => f.action),
        ['quarantined'],
      )
    })
  }

  test('a large move with a split or a dividend that day is not flagged', () => {
    const b = goodBars()
    b.set('S1', [bar(50, { splitFactor: 2 })])
    b.set('S2', [bar(40)])
    const actions = new Map([['S2', [{ ticker: 'S2', date: DAY, kind: 'dividend' as const, value: 60 }]]])
    const r = gate(b, { actions })
    assert.deepEqual(r.findings, [])
    assert.equal(r.accepted.size, universe.length)
  })

  test('the move bound is a log return and configurable', () => {
    const b = goodBars()
    b.set('S1', [bar(100 * Math.exp(0.49))])
    b.set('S2', [bar(100 * Math.exp(-0.51))])
    assert.deepEqual(
      gate(b).findings.map((f) => f.symbol),
      ['S2'],
    )
    assert.deepEqual(
      gate(b, { settings: { maxLogMove: 0.3 } }).findings.map((f) => f.symbol),
      ['S1', 'S2'],
    )
  })

  test('identical duplicate bars keep one, with a finding', () => {
    const b = goodBars()
    b.set('S1', [bar(101), bar(101)])
    const r = gate(b)
    assert.deepEqual(
      r.findings.map((f) => [f.kind, f.action]),
      [['duplicate_date', 'kept']],
    )
    assert.equal(r.accepted.get('S1')?.close, 101)
  })

  test('a bar on a closed day is a calendar finding', () => {
    const r = gate(goodBars(), { off: [{ symbol: 'S5', date: '2024-03-16' }] })
    assert.deepEqual(
      r.findings.map((f) => [f.kind, f.symbol, f.action]),
      [['calendar', 'S5', 'dropped']],
    )
  })

  test('no bars at all on a session quarantines, whatever the policy', () => {
    const r = gate(new Map())
    assert.match(r.quarantine ?? '', /no bars at all/)
    assert.equal(r.findings[0].kind, 'calendar')
  })

  test('the market ETF missing quarantines', () => {
    const b = goodBars()
    b.delete('SPY')
    const r = gate(b)
    assert.match(r.quarantine ?? '', /market ETF SPY/)
    assert.deepEqual(
      r.findings.map((f) => f.action),
      ['quarantined', 'quarantined'],
    )
  })

  test('the universe shrinking past the bound quarantines; up to it, stocks are dropped', () => {
    // 40 stocks: 2 missing is 5 % (allowed), 3 is 7.5 %.
    const two = goodBars()
    two.delete('S0')
    two.delete('S1')
    assert.equal(gate(two).quarantine, null)
    const three = goodBars()
    for (const s of ['S0', 'S1', 'S2']) three.delete(s)
    const r = gate(three)
    assert.match(r.quarantine ?? '', /37 of the 40 stocks/)
    assert.ok(r.findings.some((f) => f.kind === 'universe_shrank'))
    assert.equal(gate(three, { settings: { maxShrink: 0.1 } }).quarantine, null)
  })

  test('a security not expected (no bar the previous session) may be missing silently', () => {
    const b = goodBars()
    b.delete('S7')
    const u = universe.map((s) => (s.symbol === 'S7' ? { ...s, expected: false } : s))
    const r = gateDay({ day: DAY, bars: b, offCalendar: [], actions: new Map() }, u, 'SPY', DEFAULT_GATE)
    assert.deepEqual(r.findings, [])
  })
})

describe('new sessions', () => {
  test('after the close + grace, in New York time (EST and EDT)', () => {
    // Friday 2024-03-15, EDT (UTC−4): close 20:00Z, +2 h grace = 22:00Z.
    assert.deepEqual(newSessions('2024-03-14', new Date('2024-03-15T21:59:00Z')), [])
    assert.deepEqual(newSessions('2024-03-14', new Date('2024-03-15T22:00:00Z')), ['2024-03-15'])
    // Friday 2024-01-12, EST (UTC−5): close + grace = 23:00Z.
    assert.deepEqual(newSessions('2024-01-11', new Date('2024-01-12T22:59:00Z')), [])
    assert.deepEqual(newSessions('2024-01-11', new Date('2024-01-12T23:00:00Z')), ['2024-01-12'])
    assert.deepEqual(newSessions('2024-01-11', new Date('2024-01-12T22:00:00Z'), 60), ['2024-01-12'])
  })

  test('a half day closes at 13:00: it is in three hours earlier', () => {
    // Friday 2024-11-29, the day after Thanksgiving, EST: 13:00 close = 18:00Z, +2 h = 20:00Z.
    assert.deepEqual(newSessions('2024-11-27', new Date('2024-11-29T19:59:00Z')), [])
    assert.deepEqual(newSessions('2024-11-27', new Date('2024-11-29T20:00:00Z')), ['2024-11-29'])
    assert.equal(afterClose('2024-11-29').toISOString(), '2024-11-29T20:01:00.000Z')
  })

  test('weekends and holidays add nothing; several missed sessions come in order', () => {
    // Good Friday 2024-03-29; the weekend after.
    assert.deepEqual(newSessions('2024-03-28', new Date('2024-03-31T12:00:00Z')), [])
    assert.deepEqual(newSessions('2024-03-26', new Date('2024-04-02T12:00:00Z')), [
      '2024-03-27',
      '2024-03-28',
      '2024-04-01',
    ])
  })

  test('afterClose is just past the close + grace of that day', () => {
    assert.equal(afterClose('2024-03-15').toISOString(), '2024-03-15T22:01:00.000Z')
    assert.equal(afterClose('2024-01-12').toISOString(), '2024-01-12T23:01:00.000Z')
    assert.throws(() => afterClose('2024-13-01'), /YYYY-MM-DD/)
  })
})
