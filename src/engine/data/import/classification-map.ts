import { basename } from 'node:path'
import { InputError } from '../../../platform/errors.ts'
import type { Progress } from '../../../platform/progress.ts'
import { canonicalTicker, isValidTicker } from '../aliases.ts'
import type { QualityFinding } from '../format.ts'
import { type Cell, cellText, findColumn, requireColumn } from './cells.ts'
import { readTable, type TableSink } from './table-reader.ts'

/**
 * The GICS → ETF map (`gics_sector,sector_etf,gics_sub_industry,industry_etf,alt_industry_etf,
 * note`), resolved against the ETFs that have a price series: sector ETFs must have one (the
 * model has no fallback for a sector); an unpriced industry ETF falls back to the alternative
 * ETF, else to none (the model then uses the sector ETF).
 */
export interface ClassificationMap {
  /** Sector code → sector ETF, in file order. */
  sectors: Map<string, string>
  /** Industry code → subsector ETF (null = falls back to the sector ETF), in file order. */
  industries: Map<string, { sector: string; etf: string | null }>
}

interface Cols {
  sector: number
  sectorEtf: number
  industry: number
  industryEtf: number
  altEtf: number
}

class ClassificationMapSink implements TableSink {
  private cols: Cols = { sector: -1, sectorEtf: -1, industry: -1, industryEtf: -1, altEtf: -1 }
  private names: string[] = []
  readonly map: ClassificationMap = { sectors: new Map(), industries: new Map() }
  private readonly industryLines = new Map<string, number>()
  private readonly sectorLines = new Map<string, number>()

  constructor(
    private readonly file: string,
    private readonly priced: ReadonlySet<string>,
    private readonly findings: QualityFinding[],
  ) {}

  header(names: string[]): void {
    this.names = names
    this.cols = {
      sector: requireColumn(this.file, names, ['gics_sector', 'sector']),
      sectorEtf: requireColumn(this.file, names, ['sector_etf']),
      industry: requireColumn(this.file, names, ['gics_sub_industry', 'sub_industry', 'industry']),
      industryEtf: requireColumn(this.file, names, ['industry_etf', 'subsector_etf']),
      altEtf: findColumn(names, ['alt_industry_etf', 'alt_etf']),
    }
  }

  row(cells: Cell[], line: number): void {
    const sector = cellText(cells[this.cols.sector])
    if (sector === '')
      throw new InputError({ file: this.file, line, column: this.names[this.cols.sector] }, 'missing sector')
    const sectorEtf = this.etf(cells, this.cols.sectorEtf, line)
    if (sectorEtf === null) {
      throw new InputError(
        { file: this.file, line, column: this.names[this.cols.sectorEtf] },
        `missing sector ETF for ${sector}`,
      )
    }
    this.addSector(sector, sectorEtf, line)
    const industry = cellText(cells[this.cols.industry])
    if (industry === '') return
    const known = this.industryLines.get(industry)
    if (known !== undefined) {
      throw new InputError(
        { file: this.file, line, column: this.names[this.cols.industry] },
        `duplicate sub-industry "${industry}" (also on line ${known})`,
      )
    }
    this.industryLines.set(industry, line)
    this.map.industries.set(industry, { sector, etf: this.industryEtf(cells, industry, line) })
  }

  private addSector(sector: string, etf: string, line: number): void {
    const known = this.map.sectors.get(sector)
    if (known !== undefined && known !== etf) {
      throw new InputError(
        { file: this.file, line, column: this.names[this.cols.sectorEtf] },
        `sector "${sector}" mapped to ${etf} here but to ${known} on line ${this.sectorLines.get(sector)}`,
      )
    }
    if (known !== undefined) return
    if (!this.priced.has(etf)) {
      throw new InputError(
        { file: this.file, line, column: this.names[this.cols.sectorEtf] },
        `sector ETF ${etf} (for ${sector}) has no price series in the price files`,
      )
    }
    this.map.sectors.set(sector, etf)
    this.sectorLines.set(sector, line)
  }

  /** The industry ETF if priced, else the alternative if priced, else null (with a note). */
  private industryEtf(cells: Cell[], industry: string, line: number): string | null {
    const etf = this.etf(cells, this.cols.industryEtf, line)
    if (etf === null || this.priced.has(etf)) return etf
    const alt = this.cols.altEtf >= 0 ? this.etf(cells, this.cols.altEtf, line) : null
    const usable = alt !== null && this.priced.has(alt) ? alt : null
    const instead = usable ? `uses the alternative ${usable}` : 'falls back to the sector ETF'
    this.findings.push({
      kind: 'note',
      detail: `${basename(this.file)}:${line}: industry ETF ${etf} for "${industry}" has no price series; the subsector ${instead}`,
    })
    return usable
  }

  private etf(cells: Cell[], index: number, line: number): string | null {
    const raw = cellText(cells[index])
    if (raw === '') return null
    const t = canonicalTicker(raw)
    if (!isValidTicker(t))
      throw new InputError(
        { file: this.file, line, column: this.names[index] },
        `"${raw}" is not a valid ticker`,
      )
    return t
  }
}

export async function readClassificationMap(
  file: string,
  priced: ReadonlySet<string>,
  findings: QualityFinding[],
  progress: Progress,
): Promise<ClassificationMap> {
  const sink = new ClassificationMapSink(file, priced, findings)
  await readTable(file, sink, progress, `classification map ${basename(file)}`)
  return sink.map
}
