import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { ModelStore } from '../../../engine/model-store/reader.ts'
import { AppError } from '../../../platform/errors.ts'
import type { EvaluationResult } from './summary.ts'

/**
 * The evaluation is cached per build (docs/model-quality.md): `<store root>/evaluations/<build>.json`
 * beside `builds/`, so a new build starts without one and an old build keeps its own. A store
 * opened from a build directory (no CURRENT) uses `evaluations/build.json` inside it; a remote
 * (published) store has no local cache.
 */
function evaluationPath(store: ModelStore): string | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(store.dir)) return null
  return store.buildId === null
    ? join(store.dir, 'evaluations', 'build.json')
    : join(dirname(dirname(store.dir)), 'evaluations', `${store.buildId}.json`)
}

export async function readEvaluation(store: ModelStore): Promise<EvaluationResult | null> {
  const path = evaluationPath(store)
  if (path === null) return null
  try {
    const r = JSON.parse(await readFile(path, 'utf8')) as EvaluationResult
    return r.build === store.buildId ? r : null
  } catch {
    return null
  }
}

/** Writes the result atomically (temporary file, then rename); returns its path. */
export async function writeEvaluation(store: ModelStore, result: EvaluationResult): Promise<string> {
  const path = evaluationPath(store)
  if (path === null)
    throw new AppError('INVALID_REQUEST', `${store.dir} is a published store: evaluate a local copy`)
  await mkdir(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.tmp`
  await writeFile(tmp, `${JSON.stringify(result, null, 1)}\n`)
  await rename(tmp, path)
  return path
}
