/**
 * SEC SIC codes → erm3's classification (GICS sector names, and the sub-industry for codes that
 * clearly denote one). The fallback for stocks that no sector or subsector ETF holds: most of a
 * broad universe, since sector SPDRs hold only S&P 500 names. SIC is an older, product-based
 * taxonomy, so the mapping is approximate: a rule names a sub-industry only where the SIC code
 * and the GICS sub-industry describe the same business. The first rule whose range holds the
 * code wins: single codes come before the ranges they sit in.
 */

type Rule = [lo: number, hi: number, sector: string, industry: string | null]

const IT = 'Information Technology'
const FIN = 'Financials'
const HC = 'Health Care'
const EN = 'Energy'
const CD = 'Consumer Discretionary'
const CS = 'Consumer Staples'
const IND = 'Industrials'
const MAT = 'Materials'
const RE = 'Real Estate'
const UT = 'Utilities'
const COM = 'Communication Services'

export const SIC_RULES: readonly Rule[] = [
  // single codes
  [1040, 1040, MAT, 'Gold'],
  [1311, 1311, EN, 'Oil & Gas Exploration & Production'],
  [1381, 1381, EN, 'Oil & Gas Drilling'],
  [1389, 1389, EN, 'Oil & Gas Equipment & Services'],
  [1531, 1531, CD, 'Homebuilding'],
  [2086, 2086, CS, 'Soft Drinks & Non-alcoholic Beverages'],
  [2834, 2834, HC, 'Pharmaceuticals'],
  [2836, 2836, HC, 'Biotechnology'],
  [2911, 2911, EN, 'Oil & Gas Refining & Marketing'],
  [3312, 3312, MAT, 'Steel'],
  [3331, 3331, MAT, 'Copper'],
  [3571, 3579, IT, 'Technology Hardware, Storage & Peripherals'],
  [3661, 3669, IT, 'Communications Equipment'],
  [3674, 3674, IT, 'Semiconductors'],
  [3711, 3711, CD, 'Automobile Manufacturers'],
  [3714, 3714, CD, 'Automotive Parts & Equipment'],
  [3720, 3729, IND, 'Aerospace & Defense'],
  [3760, 3769, IND, 'Aerospace & Defense'],
  [3812, 3812, IND, 'Aerospace & Defense'],
  [3841, 3841, HC, 'Health Care Equipment'],
  [3842, 3842, HC, 'Health Care Supplies'],
  [3845, 3845, HC, 'Health Care Equipment'],
  [4011, 4013, IND, 'Rail Transportation'],
  [4512, 4512, IND, 'Passenger Airlines'],
  [4513, 4513, IND, 'Air Freight & Logistics'],
  [4812, 4812, COM, 'Wireless Telecommunication Services'],
  [4813, 4813, COM, 'Integrated Telecommunication Services'],
  [4841, 4841, COM, 'Cable & Satellite'],
  [4911, 4911, UT, 'Electric Utilities'],
  [4922, 4924, UT, 'Gas Utilities'],
  [4931, 4932, UT, 'Multi-Utilities'],
  [4941, 4941, UT, 'Water Utilities'],
  [5331, 5331, CS, 'Consumer Staples Merchandise Retail'],
  [5411, 5411, CS, 'Consumer Staples Merchandise Retail'],
  [5600, 5699, CD, 'Apparel Retail'],
  [5812, 5812, CD, 'Restaurants'],
  [5912, 5912, CS, null],
  [5961, 5961, CD, 'Broadline Retail'],
  [6021, 6021, FIN, 'Diversified Banks'],
  [6022, 6022, FIN, 'Regional Banks'],
  [6035, 6036, FIN, 'Thrifts & Mortgage Finance'],
  [6141, 6141, FIN, 'Consumer Finance'],
  [6211, 6211, FIN, 'Investment Banking & Brokerage'],
  [6282, 6282, FIN, 'Asset Management & Custody Banks'],
  [6311, 6311, FIN, 'Life & Health Insurance'],
  [6324, 6324, HC, 'Managed Health Care'],
  [6331, 6331, FIN, 'Property & Casualty Insurance'],
  [6411, 6411, FIN, 'Insurance Brokers'],
  [6798, 6798, RE, null],
  [7011, 7011, CD, 'Hotels, Resorts & Cruise Lines'],
  [7310, 7319, COM, 'Advertising'],
  [7371, 7371, IT, 'IT Consulting & Other Services'],
  [7372, 7372, IT, 'Application Software'],
  [7812, 7829, COM, 'Movies & Entertainment'],
  [8060, 8069, HC, 'Health Care Facilities'],
  [8071, 8071, HC, 'Health Care Services'],
  [8731, 8731, HC, 'Life Sciences Tools & Services'],
  // ranges (sector only)
  [100, 999, CS, null],
  [1000, 1099, MAT, null],
  [1200, 1399, EN, null],
  [1400, 1499, MAT, null],
  [1500, 1799, IND, null],
  [2000, 2199, CS, null],
  [2200, 2399, CD, null],
  [2400, 2499, MAT, null],
  [2500, 2599, CD, null],
  [2600, 2699, MAT, null],
  [2700, 2799, COM, null],
  [2830, 2839, HC, null],
  [2840, 2844, CS, null],
  [2800, 2899, MAT, null],
  [2900, 2999, EN, null],
  [3100, 3199, CD, null],
  [3000, 3399, MAT, null],
  [3400, 3569, IND, null],
  [3570, 3579, IT, null],
  [3580, 3599, IND, null],
  [3600, 3629, IND, null],
  [3630, 3659, CD, null],
  [3660, 3699, IT, null],
  [3700, 3799, IND, null],
  [3820, 3829, IT, null],
  [3840, 3851, HC, null],
  [3800, 3899, IT, null],
  [3900, 3999, CD, null],
  [4000, 4599, IND, null],
  [4600, 4699, EN, 'Oil & Gas Storage & Transportation'],
  [4700, 4799, IND, null],
  [4800, 4899, COM, null],
  [4950, 4959, IND, null],
  [4900, 4999, UT, null],
  [5000, 5199, IND, null],
  [5200, 5999, CD, null],
  [6500, 6599, RE, 'Real Estate Services'],
  [6000, 6799, FIN, null],
  [7000, 7299, CD, null],
  [7370, 7379, IT, null],
  [7300, 7399, IND, null],
  [7800, 7899, COM, null],
  [7900, 7999, CD, null],
  [8000, 8099, HC, 'Health Care Services'],
  [8200, 8299, CD, null],
  [8700, 8799, IND, null],
]

/** The sector and (when the code says) the sub-industry of a SIC code; null: no rule. */
export function sicClassification(sic: number): { sector: string; industry: string | null } | null {
  for (const [lo, hi, sector, industry] of SIC_RULES) if (sic >= lo && sic <= hi) return { sector, industry }
  return null
}
