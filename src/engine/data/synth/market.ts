import { monthOf } from '../../../platform/dates.ts'
import type { Progress } from '../../../platform/progress.ts'
import { nanPanel, type Panel } from '../../model/panel.ts'
import type { Rng } from '../../model/random.ts'
import { BlockPanel } from './block-panel.ts'

type F32Panel = Float32Array[]

import { type EtfDef, inceptionIndex, MACRO_ETFS, memberEtfs, STYLE_ETFS, type StyleRule } from './etfs.ts'
import { garchPath, latentFactors, regimeSeries } from './factors.ts'
import { INDUSTRIES, SECTORS } from './industries.ts'
import { styleMembers } from './style.ts'
import { TruthDay } from './truth.ts'
import type { Company } from './universe.ts'

export interface MarketOutput {
  stock: { adj: Panel; close: Panel; volume: Panel; shares: Panel }
  /** Single precision, as the dataset stores the truth. */
  truth: { betaMkt: F32Panel; betaSec: F32Panel; betaSub: F32Panel; idioVar: F32Panel; l3ResEr: F32Panel }
  etfTickers: string[]
  etfPrice: Panel
  etfVolume: Panel
  vix: Float64Array
}

const LOADING_KAPPA = 1 / 400
const LOADING_SD = 0.15
/** Loadings drift in monthly steps (an OU process sampled every 21 days). */
const LOADING_EVERY = 21
const RARE_JUMP_P = 0.0006
const RARE_JUMP_SD = 0.14
const IDIO_ALPHA = 0.05
const IDIO_BETA = 0.92

/**
 * Simulates every stock and ETF day by day. The day is the unit of work: each day needs the
 * previous day's caps of all stocks (ETF weights), and the truth algebra needs today's
 * aggregates before any stock's truth can be written. So each day runs its phases in order —
 * the stocks, then their truth, then the ETFs and the VIX — and the random draws come in that
 * same order every time (the dataset is a function of the seed).
 */
export function simulateMarket(
  rng: Rng,
  calendar: Int32Array,
  companies: Company[],
  bill3m: Float64Array,
  progress: Progress,
): MarketOutput {
  const T = calendar.length
  const m = marketState(rng, calendar, companies)
  const { factors, adjB, blocks, vix } = m
  progress.start('dataset: simulate market (trading days)', T)
  for (let t = 0; t < T; t++) {
    if (t === 0 || monthOf(calendar[t]) !== monthOf(calendar[t - 1])) {
      rebalanceStyles(m.styles, companies, m.capPrev, m.bm, m.index, m.indexSnapshots, t)
    }
    const nContrib = simulateStocks(m, rng, companies, t)
    writeTruth(m, companies, t, nContrib)
    simulateEtfs(m, rng, bill3m, t, nContrib)
    vix[t] =
      Math.round(
        100 * Math.sqrt(252 * factors.market.variance[t]) * 1.12 * Math.exp(0.04 * rng.normal()) * 100,
      ) / 100
    if (adjB.full(t) || t === T - 1) for (const b of blocks) b.flush()
    if (t % 64 === 0) progress.update(t)
  }
  progress.stop()
  const stock = { adj: adjB.panel, close: m.closeB.panel, volume: m.volumeB.panel, shares: m.sharesB.panel }
  rescaleAdjusted(companies, stock.adj, stock.close)
  const tr = {
    betaMkt: m.betaMktB.panel,
    betaSec: m.betaSecB.panel,
    betaSub: m.betaSubB.panel,
    idioVar: m.idioVarB.panel,
    l3ResEr: m.l3ResErB.panel,
  }
  return { stock, truth: tr, etfTickers: m.etfTickers, etfPrice: m.etfPrice, etfVolume: m.etfVolume, vix }
}

type MarketState = ReturnType<typeof marketState>

/**
 * Everything the days share: the latent factors and regime, the ETF definitions and their
 * series, the output panels, and each stock's running state (loadings, GARCH variance, price,
 * shares, yesterday's cap). The random draws here come before the first day's.
 */
function marketState(rng: Rng, calendar: Int32Array, companies: Company[]) {
  const T = calendar.length
  const N = companies.length
  const J = INDUSTRIES.length
  const regime = regimeSeries(calendar)
  const factors = latentFactors(rng.fork(1), regime, SECTORS, J)
  const members = memberEtfs(calendar)
  const truth = new TruthDay(members, SECTORS.length, J)
  const industrySector = Int32Array.from(INDUSTRIES, (d) => SECTORS.indexOf(d.sector))
  const subOf = Int32Array.from(INDUSTRIES, (d) =>
    d.etf ? members.findIndex((e) => e.ticker === d.etf) : -1,
  )
  const styles = STYLE_ETFS.map((s) => ({
    ...s,
    inceptionIdx: inceptionIndex(s.ticker, calendar),
    mask: new Uint8Array(N),
  }))
  const macroRng = rng.fork(2)
  const macros = MACRO_ETFS.map((m) => ({
    ...m,
    inceptionIdx: inceptionIndex(m.ticker, calendar),
    own: garchPath(
      macroRng,
      { sd: m.sd, alpha: 0.06, beta: 0.92, drift: 0, regimeExposure: 0.5, regimeDrift: 0 },
      regime,
    ),
  }))
  const etfTickers = [
    ...members.map((e) => e.ticker),
    ...styles.map((s) => s.ticker),
    ...macros.map((m) => m.ticker),
  ]
  const etfPrice = nanPanel(etfTickers.length, T)
  const etfVolume = nanPanel(etfTickers.length, T)
  const etfLevel = new Float64Array(etfTickers.length)
  const etfRet = new Float64Array(etfTickers.length)
  const etfInception = Int32Array.from([...members, ...styles, ...macros], (e) =>
    e.inceptionIdx < 0 ? T : e.inceptionIdx,
  )
  const etfBaseVolume = Float64Array.from(etfTickers, (_, f) =>
    f === 0 ? 8e7 : f <= SECTORS.length ? 1e7 : 2e6,
  )

  const [adjB, closeB, volumeB, sharesB] = Array.from({ length: 4 }, () => new BlockPanel(N, T))
  // The truth panels are kept in single precision, as the dataset stores them: half the memory
  // (and half the page faults of first touching it, which dominated the generator's system time).
  const [betaMktB, betaSecB, betaSubB, idioVarB, l3ResErB] = Array.from(
    { length: 5 },
    () => new BlockPanel<Float32Array>(N, T, 32, Float32Array),
  )
  const blocks = [adjB, closeB, volumeB, sharesB, betaMktB, betaSecB, betaSubB, idioVarB, l3ResErB]
  const indexSnapshots: Float64Array[] = []
  const bm = Float64Array.from(companies, (c) => c.betaM)
  const bs = Float64Array.from(companies, (c) => c.betaS)
  const bu = Float64Array.from(companies, (c) => c.betaU)
  const hIdio = Float64Array.from(companies, (c) => c.idioSd * c.idioSd)
  const price = new Float64Array(N)
  const index = new Float64Array(N)
  const shares = new Float64Array(N)
  const capPrev = new Float64Array(N).fill(Number.NaN)
  const capW = new Float64Array(N)
  const vTot = new Float64Array(N)
  const rToday = new Float64Array(N)
  const contrib = new Int32Array(N)
  const crSum = new Float64Array(J)
  const hS = new Float64Array(SECTORS.length)
  const hU = new Float64Array(J)
  const out = new Float64Array(4)
  const loadStep = Math.sqrt(LOADING_EVERY) * LOADING_SD * Math.sqrt(2 * LOADING_KAPPA)
  const vix = new Float64Array(T)
  const nextJump = Int32Array.from(companies, (c) => c.listIdx + geometric(rng, RARE_JUMP_P))
  return {
    ...{ regime, factors, members, truth, industrySector, subOf, styles, macros },
    ...{ etfTickers, etfPrice, etfVolume, etfLevel, etfRet, etfInception, etfBaseVolume },
    ...{ adjB, closeB, volumeB, sharesB, betaMktB, betaSecB, betaSubB, idioVarB, l3ResErB, blocks },
    ...{ indexSnapshots, bm, bs, bu, hIdio, price, index, shares, capPrev, capW, vTot, rToday },
    ...{ contrib, crSum, hS, hU, out, loadStep, vix, nextJump },
  }
}

/**
 * One day of every listed stock: its loadings drift (monthly), its idiosyncratic shock (GARCH,
 * earnings jumps, rare jumps), its return, price, corporate actions and volume. A stock trading
 * today and yesterday counts towards today's truth and ETF aggregates (at yesterday's cap); the
 * number of those is returned, their indices in `contrib`.
 */
function simulateStocks(m: MarketState, rng: Rng, companies: Company[], t: number): number {
  const { regime, factors, truth, adjB, closeB, volumeB, sharesB, bm, bs, bu, hIdio } = m
  const { price, index, shares, capPrev, capW, vTot, rToday, contrib, crSum, loadStep, nextJump } = m
  const N = companies.length
  const adjRow = adjB.row(t)
  const closeRow = closeB.row(t)
  const volumeRow = volumeB.row(t)
  const sharesRow = sharesB.row(t)
  const M = factors.market.ret[t]
  const regIdio = 1 + 0.4 * (regime.vol[t] - 1)
  truth.reset()
  crSum.fill(0)
  let nContrib = 0
  for (let i = 0; i < N; i++) {
    const c = companies[i]
    if (t < c.listIdx || t > c.delistIdx) continue
    if ((t + i) % LOADING_EVERY === 0) {
      bm[i] += LOADING_EVERY * LOADING_KAPPA * (c.betaM - bm[i]) + loadStep * rng.normal()
      bs[i] += LOADING_EVERY * LOADING_KAPPA * (c.betaS - bs[i]) + loadStep * rng.normal()
      bu[i] += LOADING_EVERY * LOADING_KAPPA * (c.betaU - bu[i]) + loadStep * rng.normal()
    }
    const earnings = t >= c.earningsPhase && (t - c.earningsPhase) % 63 === 0
    const vGarch = hIdio[i] * regIdio * regIdio
    const jumpSd = 2.5 * c.idioSd
    const v = vGarch + (earnings ? jumpSd * jumpSd : 0) + RARE_JUMP_P * RARE_JUMP_SD * RARE_JUMP_SD
    const z = rng.normal()
    let e = Math.sqrt(vGarch) * z
    if (earnings) e += jumpSd * rng.normal()
    if (t === nextJump[i]) {
      e += RARE_JUMP_SD * rng.normal()
      nextJump[i] = t + geometric(rng, RARE_JUMP_P)
    }
    hIdio[i] =
      c.idioSd * c.idioSd * (1 - IDIO_ALPHA - IDIO_BETA) +
      IDIO_ALPHA * hIdio[i] * z * z +
      IDIO_BETA * hIdio[i]
    const j = c.industry
    let r =
      c.drift + bm[i] * M + bs[i] * factors.sector[c.sector].ret[t] + bu[i] * factors.industry[j].ret[t] + e
    if (r < -0.9) r = -0.9
    rToday[i] = r
    const halted = c.halts.size > 0 && c.halts.has(t)
    if (t === c.listIdx) {
      price[i] = c.price0
      shares[i] = Math.round(c.cap0 / c.price0)
      index[i] = 1
    } else {
      if (!halted && !(c.halts.size > 0 && c.halts.has(t - 1))) {
        capW[i] = capPrev[i]
        vTot[i] = v
        contrib[nContrib++] = i
        truth.add(j, capPrev[i], bm[i], bs[i], bu[i], v)
        crSum[j] += capPrev[i] * r
      }
      const dividend = c.divYield > 0 && t >= c.earningsPhase + 10 && (t - c.earningsPhase - 10) % 63 === 0
      price[i] = price[i] * (1 + r) - (dividend ? (c.divYield / 4) * price[i] : 0)
      index[i] *= 1 + r
      if (price[i] > 600 && rng.uniform() < 0.03) {
        const k = price[i] > 2000 ? 4 : 2
        price[i] /= k
        shares[i] *= k
      } else if (price[i] < 1 && rng.uniform() < 0.02) {
        price[i] *= 10
        shares[i] = Math.round(shares[i] / 10)
      }
      if (t >= c.earningsPhase + 31 && (t - c.earningsPhase - 31) % 63 === 0) {
        shares[i] = Math.round(shares[i] * (1 - 0.004 + 0.01 * rng.normal()))
      }
    }
    capPrev[i] = price[i] * shares[i]
    if (halted) continue
    adjRow[i] = index[i]
    closeRow[i] = price[i]
    sharesRow[i] = shares[i]
    volumeRow[i] = Math.round(
      shares[i] *
        c.turnover *
        Math.exp(0.35 * rng.normal()) *
        (1 + 8 * Math.abs(r)) *
        Math.sqrt(regime.vol[t]),
    )
  }
  return nContrib
}

/** Today's truth of every contributing stock, from today's aggregates (TruthDay). */
function writeTruth(m: MarketState, companies: Company[], t: number, nContrib: number): void {
  const { factors, members, truth, industrySector, subOf, hS, hU, out, capW, vTot, bm, bs, bu, contrib } = m
  const { betaMktB, betaSecB, betaSubB, idioVarB, l3ResErB } = m
  const J = INDUSTRIES.length
  for (let k = 0; k < SECTORS.length; k++) hS[k] = factors.sector[k].variance[t]
  for (let j = 0; j < J; j++) hU[j] = factors.industry[j].variance[t]
  truth.prepare(industrySector, factors.market.variance[t], hS, hU)
  const betaMktRow = betaMktB.row(t)
  const betaSecRow = betaSecB.row(t)
  const betaSubRow = betaSubB.row(t)
  const idioVarRow = idioVarB.row(t)
  const l3ResErRow = l3ResErB.row(t)
  for (let n = 0; n < nContrib; n++) {
    const i = contrib[n]
    const c = companies[i]
    const sec = members[1 + c.sector].inceptionIdx < t ? 1 + c.sector : -1
    const u = subOf[c.industry]
    const sub = u >= 0 && members[u].inceptionIdx < t ? u : -1
    truth.stock(c.industry, c.sector, sec, sub, capW[i], bm[i], bs[i], bu[i], vTot[i], out)
    betaMktRow[i] = out[0]
    betaSecRow[i] = out[1]
    betaSubRow[i] = out[2]
    l3ResErRow[i] = out[3]
    idioVarRow[i] = vTot[i]
  }
}

/** Today's ETF returns (member-built, then style, then macro proxies), levels and volumes. */
function simulateEtfs(m: MarketState, rng: Rng, bill3m: Float64Array, t: number, nContrib: number): void {
  const { regime, factors, members, truth, styles, macros, etfTickers, etfPrice, etfVolume } = m
  const { etfLevel, etfRet, etfInception, etfBaseVolume, crSum, contrib, capW, rToday } = m
  const M = factors.market.ret[t]
  for (let f = 0; f < members.length; f++) {
    etfRet[f] = memberReturn(members[f], f, truth, crSum, factors, t) + members[f].te * rng.normal()
  }
  for (let n = 0; n < styles.length; n++) {
    etfRet[members.length + n] =
      styleReturn(styles[n].mask, contrib, nContrib, capW, rToday) + 0.0004 * rng.normal()
  }
  for (let n = 0; n < macros.length; n++) {
    const m = macros[n]
    etfRet[members.length + styles.length + n] =
      m.ticker === 'BIL' ? bill3m[t] / 252 + m.sd * rng.normal() : m.drift + m.beta * M + m.own.ret[t]
  }
  for (let f = 0; f < etfTickers.length; f++) {
    if (t < etfInception[f]) continue
    etfLevel[f] = t === etfInception[f] ? 20 + Math.floor(180 * rng.uniform()) : etfLevel[f] * (1 + etfRet[f])
    etfPrice[f][t] = etfLevel[f]
    etfVolume[f][t] = Math.round(etfBaseVolume[f] * Math.exp(0.3 * rng.normal()) * regime.vol[t])
  }
}

function memberReturn(
  e: EtfDef,
  f: number,
  truth: TruthDay,
  crSum: Float64Array,
  factors: ReturnType<typeof latentFactors>,
  t: number,
): number {
  const cap = truth.etfCap(f)
  if (cap > 0) {
    let s = 0
    for (const j of e.industries) s += crSum[j]
    return s / cap
  }
  // No members in the universe today: the ETF tracks its latent factors (as the truth assumes).
  let r = factors.market.ret[t]
  if (e.sector >= 0) r += factors.sector[e.sector].ret[t]
  if (f > factors.sector.length) {
    let u = 0
    for (const j of e.industries) u += factors.industry[j].ret[t]
    r += u / e.industries.length
  }
  return r
}

function styleReturn(
  mask: Uint8Array,
  contrib: Int32Array,
  n: number,
  capW: Float64Array,
  r: Float64Array,
): number {
  let s = 0
  let w = 0
  for (let k = 0; k < n; k++) {
    const i = contrib[k]
    if (mask[i] === 0) continue
    s += capW[i] * r[i]
    w += capW[i]
  }
  return w > 0 ? s / w : 0
}

/** Days until the next event of a daily Bernoulli(p) process (at least 1). */
function geometric(rng: Rng, p: number): number {
  return 1 + Math.floor(Math.log(1 - rng.uniform()) / Math.log(1 - p))
}

/**
 * Monthly style rebalance from the previous close: caps of stocks trading yesterday and the
 * trailing 12-month total return from month-start snapshots of each stock's total-return index.
 */
function rebalanceStyles(
  styles: { rule: StyleRule; mask: Uint8Array }[],
  companies: Company[],
  capPrev: Float64Array,
  betaM: Float64Array,
  index: Float64Array,
  snapshots: Float64Array[],
  t: number,
): void {
  const live = (i: number) => t > companies[i].listIdx && t <= companies[i].delistIdx
  const cap = Float64Array.from(capPrev, (v, i) => (live(i) ? v : Number.NaN))
  const yearAgo = snapshots.length >= 12 ? snapshots[snapshots.length - 12] : null
  const trailing = Float64Array.from(index, (v, i) =>
    yearAgo && live(i) && yearAgo[i] > 0 ? v / yearAgo[i] - 1 : Number.NaN,
  )
  snapshots.push(Float64Array.from(index, (v, i) => (live(i) ? v : Number.NaN)))
  const chosen = styleMembers({ companies, cap, betaM, trailing })
  for (const s of styles) {
    s.mask.fill(0)
    for (const i of chosen[s.rule]) s.mask[i] = 1
  }
}

/** Adjusted closes are scaled so the last adjusted close equals the last raw close (vendor style). */
function rescaleAdjusted(companies: Company[], adj: Panel, close: Panel): void {
  companies.forEach((c, i) => {
    let last = c.delistIdx
    while (last >= c.listIdx && Number.isNaN(close[i][last])) last--
    if (last < c.listIdx) return
    const k = close[i][last] / adj[i][last]
    const a = adj[i]
    for (let t = c.listIdx; t <= last; t++) a[t] *= k
  })
}
