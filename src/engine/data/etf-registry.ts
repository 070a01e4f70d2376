/**
 * Reference facts about the ETFs the model uses as factors: display names and (approximate,
 * public) inception dates. The importer uses the names; the synthetic generator uses the
 * inception dates so its ETF series start when the real ones did (e.g. XLRE, XLC).
 */
export interface EtfInfo {
  name: string
  inception: string
}

export const MARKET_ETF = 'SPY'

/** GICS sector name → Select Sector SPDR. */
export const SECTOR_ETFS: Readonly<Record<string, string>> = {
  Materials: 'XLB',
  'Communication Services': 'XLC',
  Energy: 'XLE',
  Financials: 'XLF',
  Industrials: 'XLI',
  'Information Technology': 'XLK',
  'Consumer Staples': 'XLP',
  'Real Estate': 'XLRE',
  Utilities: 'XLU',
  'Health Care': 'XLV',
  'Consumer Discretionary': 'XLY',
}

export const ETF_INFO: Readonly<Record<string, EtfInfo>> = {
  SPY: { name: 'SPDR S&P 500 ETF Trust', inception: '1993-01-29' },
  XLB: { name: 'Materials Select Sector SPDR Fund', inception: '1998-12-22' },
  XLC: { name: 'Communication Services Select Sector SPDR Fund', inception: '2018-06-19' },
  XLE: { name: 'Energy Select Sector SPDR Fund', inception: '1998-12-22' },
  XLF: { name: 'Financial Select Sector SPDR Fund', inception: '1998-12-22' },
  XLI: { name: 'Industrial Select Sector SPDR Fund', inception: '1998-12-22' },
  XLK: { name: 'Technology Select Sector SPDR Fund', inception: '1998-12-22' },
  XLP: { name: 'Consumer Staples Select Sector SPDR Fund', inception: '1998-12-22' },
  XLRE: { name: 'Real Estate Select Sector SPDR Fund', inception: '2015-10-08' },
  XLU: { name: 'Utilities Select Sector SPDR Fund', inception: '1998-12-22' },
  XLV: { name: 'Health Care Select Sector SPDR Fund', inception: '1998-12-22' },
  XLY: { name: 'Consumer Discretionary Select Sector SPDR Fund', inception: '1998-12-22' },
  // subsector (industry) ETFs
  SMH: { name: 'VanEck Semiconductor ETF', inception: '2011-12-21' },
  SOXX: { name: 'iShares Semiconductor ETF', inception: '2001-07-13' },
  IGV: { name: 'iShares Expanded Tech-Software Sector ETF', inception: '2001-07-13' },
  XSW: { name: 'SPDR S&P Software & Services ETF', inception: '2011-09-28' },
  SKYY: { name: 'First Trust Cloud Computing ETF', inception: '2011-07-06' },
  HACK: { name: 'Amplify Cybersecurity ETF', inception: '2014-11-12' },
  KRE: { name: 'SPDR S&P Regional Banking ETF', inception: '2006-06-22' },
  IAT: { name: 'iShares U.S. Regional Banks ETF', inception: '2006-05-05' },
  KBE: { name: 'SPDR S&P Bank ETF', inception: '2005-11-15' },
  KBWB: { name: 'Invesco KBW Bank ETF', inception: '2011-11-01' },
  IAI: { name: 'iShares U.S. Broker-Dealers & Securities Exchanges ETF', inception: '2006-05-05' },
  KCE: { name: 'SPDR S&P Capital Markets ETF', inception: '2005-11-15' },
  IPAY: { name: 'Amplify Digital Payments ETF', inception: '2015-07-16' },
  KIE: { name: 'SPDR S&P Insurance ETF', inception: '2005-11-15' },
  KBWP: { name: 'Invesco KBW Property & Casualty Insurance ETF', inception: '2010-12-02' },
  XBI: { name: 'SPDR S&P Biotech ETF', inception: '2006-02-06' },
  IBB: { name: 'iShares Biotechnology ETF', inception: '2001-02-09' },
  XPH: { name: 'SPDR S&P Pharmaceuticals ETF', inception: '2006-06-22' },
  IHE: { name: 'iShares U.S. Pharmaceuticals ETF', inception: '2006-05-05' },
  IHI: { name: 'iShares U.S. Medical Devices ETF', inception: '2006-05-05' },
  XHE: { name: 'SPDR S&P Health Care Equipment ETF', inception: '2011-01-28' },
  IHF: { name: 'iShares U.S. Healthcare Providers ETF', inception: '2006-05-05' },
  XHS: { name: 'SPDR S&P Health Care Services ETF', inception: '2011-09-29' },
  XOP: { name: 'SPDR S&P Oil & Gas Exploration & Production ETF', inception: '2006-06-22' },
  IEO: { name: 'iShares U.S. Oil & Gas Exploration & Production ETF', inception: '2006-05-05' },
  OIH: { name: 'VanEck Oil Services ETF', inception: '2011-12-21' },
  XES: { name: 'SPDR S&P Oil & Gas Equipment & Services ETF', inception: '2006-06-22' },
  CRAK: { name: 'VanEck Oil Refiners ETF', inception: '2015-08-19' },
  MLPX: { name: 'Global X MLP & Energy Infrastructure ETF', inception: '2013-08-07' },
  AMLP: { name: 'Alerian MLP ETF', inception: '2010-08-25' },
  ITB: { name: 'iShares U.S. Home Construction ETF', inception: '2006-05-05' },
  XHB: { name: 'SPDR S&P Homebuilders ETF', inception: '2006-02-06' },
  XRT: { name: 'SPDR S&P Retail ETF', inception: '2006-06-22' },
  FDN: { name: 'First Trust Dow Jones Internet Index Fund', inception: '2006-06-23' },
  PEJ: { name: 'Invesco Leisure and Entertainment ETF', inception: '2005-06-23' },
  CARZ: { name: 'First Trust S-Network Future Vehicles & Technology ETF', inception: '2011-05-10' },
  PBJ: { name: 'Invesco Food & Beverage ETF', inception: '2005-06-23' },
  ITA: { name: 'iShares U.S. Aerospace & Defense ETF', inception: '2006-05-05' },
  XAR: { name: 'SPDR S&P Aerospace & Defense ETF', inception: '2011-09-29' },
  JETS: { name: 'U.S. Global Jets ETF', inception: '2015-04-30' },
  IYT: { name: 'iShares Transportation Average ETF', inception: '2003-10-10' },
  XTN: { name: 'SPDR S&P Transportation ETF', inception: '2011-01-28' },
  PAVE: { name: 'Global X U.S. Infrastructure Development ETF', inception: '2017-03-08' },
  GRID: {
    name: 'First Trust NASDAQ Clean Edge Smart Grid Infrastructure Index Fund',
    inception: '2009-11-17',
  },
  XME: { name: 'SPDR S&P Metals & Mining ETF', inception: '2006-06-22' },
  SLX: { name: 'VanEck Steel ETF', inception: '2006-10-16' },
  COPX: { name: 'Global X Copper Miners ETF', inception: '2010-04-20' },
  GDX: { name: 'VanEck Gold Miners ETF', inception: '2006-05-22' },
  RING: { name: 'iShares MSCI Global Gold Miners ETF', inception: '2012-02-01' },
  SRVR: { name: 'Pacer Data & Infrastructure Real Estate ETF', inception: '2018-05-15' },
  INDS: { name: 'Pacer Industrial Real Estate ETF', inception: '2018-11-26' },
  REZ: { name: 'iShares Residential and Multisector Real Estate ETF', inception: '2007-05-04' },
  VNQ: { name: 'Vanguard Real Estate ETF', inception: '2004-09-29' },
  IYR: { name: 'iShares U.S. Real Estate ETF', inception: '2000-06-19' },
  IYZ: { name: 'iShares U.S. Telecommunications ETF', inception: '2000-05-26' },
  XTL: { name: 'SPDR S&P Telecom ETF', inception: '2011-01-28' },
  SOCL: { name: 'Global X Social Media ETF', inception: '2011-11-15' },
  TAN: { name: 'Invesco Solar ETF', inception: '2008-04-15' },
  PHO: { name: 'Invesco Water Resources ETF', inception: '2005-12-06' },
  // macro proxies (docs/methodology.md §13)
  TIP: { name: 'iShares TIPS Bond ETF', inception: '2003-12-05' },
  VGIT: { name: 'Vanguard Intermediate-Term Treasury ETF', inception: '2009-11-23' },
  BIL: { name: 'SPDR Bloomberg 1-3 Month T-Bill ETF', inception: '2007-05-30' },
  HYG: { name: 'iShares iBoxx $ High Yield Corporate Bond ETF', inception: '2007-04-11' },
  USO: { name: 'United States Oil Fund', inception: '2006-04-10' },
  GLD: { name: 'SPDR Gold Shares', inception: '2004-11-18' },
  UUP: { name: 'Invesco DB US Dollar Index Bullish Fund', inception: '2007-03-01' },
  VXX: { name: 'iPath Series B S&P 500 VIX Short-Term Futures ETN', inception: '2009-01-30' },
  BITO: { name: 'ProShares Bitcoin Strategy ETF', inception: '2021-10-19' },
  // style factors
  MTUM: { name: 'iShares MSCI USA Momentum Factor ETF', inception: '2013-04-18' },
  QUAL: { name: 'iShares MSCI USA Quality Factor ETF', inception: '2013-07-18' },
  USMV: { name: 'iShares MSCI USA Min Vol Factor ETF', inception: '2011-10-20' },
  VLUE: { name: 'iShares MSCI USA Value Factor ETF', inception: '2013-04-18' },
  IWF: { name: 'iShares Russell 1000 Growth ETF', inception: '2000-05-26' },
  IWM: { name: 'iShares Russell 2000 ETF', inception: '2000-05-26' },
  SCHD: { name: 'Schwab U.S. Dividend Equity ETF', inception: '2011-10-20' },
  MOAT: { name: 'VanEck Morningstar Wide Moat ETF', inception: '2012-04-25' },
}

/** Macro factor name → proxy (docs/methodology.md §13). `VIX` is an index level, not an ETF. */
export const MACRO_FACTORS: Readonly<Record<string, { ticker: string; kind: 'etf' | 'index' }>> = {
  inflation: { ticker: 'TIP', kind: 'etf' },
  term_spread: { ticker: 'VGIT', kind: 'etf' },
  short_rates: { ticker: 'BIL', kind: 'etf' },
  credit: { ticker: 'HYG', kind: 'etf' },
  oil: { ticker: 'USO', kind: 'etf' },
  gold: { ticker: 'GLD', kind: 'etf' },
  usd: { ticker: 'UUP', kind: 'etf' },
  volatility: { ticker: 'VXX', kind: 'etf' },
  bitcoin: { ticker: 'BITO', kind: 'etf' },
  vix: { ticker: 'VIX', kind: 'index' },
}

/** Style factor name → ETF (docs/methodology.md §13). */
export const STYLE_FACTORS: Readonly<Record<string, string>> = {
  momentum: 'MTUM',
  quality: 'QUAL',
  low_vol: 'USMV',
  value: 'VLUE',
  growth: 'IWF',
  size: 'IWM',
  dividend: 'SCHD',
  moat: 'MOAT',
}

export function etfName(ticker: string): string {
  return ETF_INFO[ticker]?.name ?? ticker
}
