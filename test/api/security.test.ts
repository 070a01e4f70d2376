import { backendsAvailable } from '../helpers/test-app.ts'
import { type SecurityCase, securitySuite } from './security-suite.ts'

/** Every authenticated operation so far; later routes add their case here. */
const CASES: SecurityCase[] = [
  { op: 'getBalance', input: {}, metered: false },
  {
    op: 'getInvoices',
    input: { query: { period: 'month' } },
    metered: false,
    invalid: { query: { period: 'decade' as 'month' } },
  },
  {
    op: 'getMetrics',
    input: { params: { ticker: 'SPY' } },
    metered: true,
    invalid: { params: { ticker: 'NO SUCH!' } },
  },
] as SecurityCase[]

securitySuite('SQLite + in-process limits', { db: 'sqlite', limits: 'memory' }, CASES)
securitySuite(
  'PostgreSQL + Redis',
  { db: 'postgres', limits: 'redis' },
  CASES,
  backendsAvailable.postgres ?? backendsAvailable.redis,
)
