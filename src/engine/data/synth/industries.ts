/**
 * The synthetic market's classification: GICS sub-industries (the public taxonomy) with the
 * sector they belong to, the subsector ETF that tracks them (null = no ETF: the model falls back
 * to the sector ETF) and the share of the universe's companies in them. Several industries
 * share one ETF (e.g. VNQ), as in practice; an ETF never spans two sectors.
 */
export interface IndustryDef {
  sector: string
  industry: string
  etf: string | null
  weight: number
}

type Row = [string, string | null, number]

const BY_SECTOR: Record<string, Row[]> = {
  'Information Technology': [
    ['Semiconductors', 'SMH', 3],
    ['Semiconductor Materials & Equipment', 'SOXX', 1.5],
    ['Application Software', 'IGV', 4],
    ['Systems Software', 'HACK', 2],
    ['IT Consulting & Other Services', 'XSW', 1.5],
    ['Internet Services & Infrastructure', 'SKYY', 1],
    ['Technology Hardware, Storage & Peripherals', null, 1],
    ['Communications Equipment', null, 1.2],
    ['Electronic Components', null, 1],
    ['Electronic Equipment & Instruments', null, 1],
  ],
  Financials: [
    ['Regional Banks', 'KRE', 5],
    ['Diversified Banks', 'KBWB', 0.8],
    ['Thrifts & Mortgage Finance', 'KBE', 1.2],
    ['Diversified Financial Services', 'IAT', 0.8],
    ['Investment Banking & Brokerage', 'IAI', 1],
    ['Financial Exchanges & Data', 'KCE', 0.6],
    ['Asset Management & Custody Banks', 'KCE', 1.5],
    ['Transaction & Payment Processing Services', 'IPAY', 0.8],
    ['Multi-line Insurance', 'KIE', 0.6],
    ['Life & Health Insurance', 'KIE', 0.8],
    ['Property & Casualty Insurance', 'KBWP', 1.2],
    ['Insurance Brokers', null, 0.4],
    ['Consumer Finance', null, 0.8],
  ],
  'Health Care': [
    ['Biotechnology', 'XBI', 7],
    ['Life Sciences Tools & Services', 'IBB', 1],
    ['Pharmaceuticals', 'XPH', 2],
    ['Health Care Equipment', 'IHI', 2.5],
    ['Health Care Supplies', 'XHE', 1],
    ['Health Care Services', 'XHS', 1],
    ['Managed Health Care', 'IHF', 0.4],
    ['Health Care Facilities', 'IHF', 0.7],
    ['Health Care Distributors', null, 0.3],
  ],
  Energy: [
    ['Oil & Gas Exploration & Production', 'XOP', 2],
    ['Integrated Oil & Gas', null, 0.3],
    ['Oil & Gas Equipment & Services', 'OIH', 1],
    ['Oil & Gas Refining & Marketing', 'CRAK', 0.4],
    ['Oil & Gas Storage & Transportation', 'AMLP', 0.8],
    ['Oil & Gas Drilling', 'XES', 0.4],
  ],
  'Consumer Discretionary': [
    ['Homebuilding', 'ITB', 0.8],
    ['Home Improvement Retail', 'XHB', 0.4],
    ['Broadline Retail', 'FDN', 0.6],
    ['Apparel Retail', 'XRT', 1],
    ['Other Specialty Retail', 'XRT', 1.2],
    ['Hotels, Resorts & Cruise Lines', 'PEJ', 0.8],
    ['Casinos & Gaming', 'PEJ', 0.6],
    ['Restaurants', null, 1.5],
    ['Automobile Manufacturers', 'CARZ', 0.4],
    ['Automotive Parts & Equipment', null, 1],
    ['Apparel, Accessories & Luxury Goods', null, 0.9],
  ],
  'Consumer Staples': [
    ['Packaged Foods & Meats', 'PBJ', 1.4],
    ['Soft Drinks & Non-alcoholic Beverages', 'PBJ', 0.4],
    ['Household Products', null, 0.5],
    ['Consumer Staples Merchandise Retail', null, 0.6],
    ['Tobacco', null, 0.2],
  ],
  Industrials: [
    ['Aerospace & Defense', 'ITA', 1.5],
    ['Passenger Airlines', 'JETS', 0.6],
    ['Rail Transportation', 'IYT', 0.3],
    ['Air Freight & Logistics', 'XTN', 0.5],
    ['Construction & Engineering', 'PAVE', 1],
    ['Electrical Components & Equipment', 'GRID', 1.2],
    ['Industrial Machinery & Supplies & Components', null, 3],
    ['Industrial Conglomerates', null, 0.3],
    ['Building Products', null, 1],
    ['Research & Consulting Services', null, 1],
  ],
  Materials: [
    ['Diversified Metals & Mining', 'XME', 0.8],
    ['Steel', 'SLX', 0.5],
    ['Copper', 'COPX', 0.3],
    ['Gold', 'GDX', 0.6],
    ['Specialty Chemicals', null, 1.2],
    ['Commodity Chemicals', null, 0.6],
    ['Construction Materials', null, 0.3],
    ['Paper & Plastic Packaging Products & Materials', null, 0.6],
  ],
  'Real Estate': [
    ['Data Center REITs', 'SRVR', 0.3],
    ['Industrial REITs', 'INDS', 0.8],
    ['Multi-Family Residential REITs', 'REZ', 0.9],
    ['Retail REITs', 'VNQ', 1.3],
    ['Health Care REITs', 'VNQ', 0.8],
    ['Office REITs', 'IYR', 1.1],
    ['Real Estate Services', null, 1.3],
  ],
  Utilities: [
    ['Electric Utilities', null, 1.2],
    ['Multi-Utilities', null, 0.7],
    ['Renewable Electricity', 'TAN', 0.5],
    ['Water Utilities', 'PHO', 0.3],
    ['Gas Utilities', null, 0.4],
  ],
  'Communication Services': [
    ['Integrated Telecommunication Services', 'IYZ', 0.5],
    ['Cable & Satellite', 'IYZ', 0.4],
    ['Wireless Telecommunication Services', 'XTL', 0.4],
    ['Interactive Media & Services', 'SOCL', 1],
    ['Movies & Entertainment', null, 0.8],
    ['Advertising', null, 0.5],
    ['Interactive Home Entertainment', null, 0.4],
  ],
}

export const INDUSTRIES: readonly IndustryDef[] = Object.entries(BY_SECTOR).flatMap(([sector, rows]) =>
  rows.map(([industry, etf, weight]) => ({ sector, industry, etf, weight })),
)

/** Distinct subsector ETFs in registry order. */
export const SUBSECTOR_ETFS: readonly string[] = [
  ...new Set(INDUSTRIES.flatMap((d) => (d.etf ? [d.etf] : []))),
]

export const SECTORS: readonly string[] = Object.keys(BY_SECTOR)
