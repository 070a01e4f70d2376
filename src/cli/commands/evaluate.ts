import { type Command, InvalidArgumentError } from 'commander'
import { ESTIMATOR_NAMES, type EstimatorName } from '../../engine/model/risk-forecast/estimators.ts'
import { AppError } from '../../platform/errors.ts'
import { createCliProgress } from '../progress.ts'

function positiveInt(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`expected a whole number ≥ 0, got ${JSON.stringify(value)}`)
  return n
}

function estimatorList(value: string): EstimatorName[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
  for (const n of names)
    if (!(ESTIMATOR_NAMES as readonly string[]).includes(n))
      throw new InvalidArgumentError(
        `unknown estimator ${JSON.stringify(n)} (one of ${ESTIMATOR_NAMES.join(', ')})`,
      )
  if (names.length === 0) throw new InvalidArgumentError('name at least one estimator')
  return names as EstimatorName[]
}

export function registerEvaluate(program: Command): void {
  program
    .command('evaluate')
    .description(
      'measure the risk forecasts out of sample (bias, rolling MRAD, hedge effectiveness) on a model store; cached per build and served at /docs/model-quality',
    )
    .requiredOption('--store <dir>', 'model store root')
    .option(
      '--dates <n>',
      'at most this many evaluation dates, evenly spread (0: every step)',
      positiveInt,
      0,
    )
    .option('--step <days>', 'trading days between evaluation dates', positiveInt, 21)
    .option('--books <n>', 'random books per size at each date', positiveInt, 30)
    .option('--singles <n>', 'random single stocks at each date', positiveInt, 300)
    .option('--seed <n>', 'seed of the random books', positiveInt, 7)
    .option(
      '--estimators <list>',
      `comma-separated (default: all): ${ESTIMATOR_NAMES.join(',')}`,
      estimatorList,
    )
    .option('--json', 'print the whole result as JSON')
    .action(
      async (o: {
        store: string
        dates: number
        step: number
        books: number
        singles: number
        seed: number
        estimators?: EstimatorName[]
        json?: boolean
      }) => {
        const [
          { ModelStore },
          { DEFAULT_EVALUATE, evaluateStore },
          { writeEvaluation },
          { evaluationReport },
        ] = await Promise.all([
          import('../../engine/model-store/reader.ts'),
          import('../../services/analytics/evaluate/run.ts'),
          import('../../services/analytics/evaluate/cache.ts'),
          import('../../services/analytics/evaluate/report.ts'),
        ])
        if (o.step < 1) throw new AppError('INVALID_INPUT', '--step must be at least 1')
        const store = await ModelStore.open(o.store)
        try {
          const result = await evaluateStore(
            store,
            {
              ...DEFAULT_EVALUATE,
              maxDates: o.dates,
              step: o.step,
              booksPerSize: o.books,
              singles: o.singles,
              seed: o.seed,
              estimators: o.estimators ?? DEFAULT_EVALUATE.estimators,
            },
            createCliProgress(),
          )
          const path = await writeEvaluation(store, result)
          process.stdout.write(
            o.json
              ? `${JSON.stringify(result, null, 1)}\n`
              : `${evaluationReport(result)}\nwritten to ${path}\n`,
          )
        } finally {
          await store.close()
        }
      },
    )
}
