import { CONFIG_VARS, type ConfigVar } from '../../platform/config-vars.ts'
import { AppError } from '../../platform/errors.ts'

/** The environment a source's `…FromEnv` reads (process.env, or a test's object). */
export type SourceEnv = Record<string, string | undefined>

type Name = keyof typeof CONFIG_VARS

/**
 * One configuration variable, parsed by its schema (src/platform/config-vars.ts) or defaulted. A
 * secret's value never reaches the message of a parse error.
 */
export function configValue<K extends Name>(env: SourceEnv, name: K): (typeof CONFIG_VARS)[K]['default'] {
  const spec = CONFIG_VARS[name] as ConfigVar<unknown>
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return spec.default as (typeof CONFIG_VARS)[K]['default']
  try {
    return spec.parse(raw.trim(), name) as (typeof CONFIG_VARS)[K]['default']
  } catch (e) {
    if (spec.secret && e instanceof Error && e.message.includes(raw.trim()))
      throw new AppError('CONFIG_INVALID', `${name} must be ${spec.expects}`)
    throw e
  }
}
