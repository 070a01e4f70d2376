import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError } from './errors.ts'

export interface Secrets {
  /** HMAC key for API-key hashes: a stolen database alone cannot be used to test keys. */
  pepper: string
  /** HS256 key of session JWTs. */
  sessionSecret: string
}

/**
 * Embedded mode has no default secret: the first process to need one generates it and keeps it
 * in `<home>/secrets.json` (0600), and every later process (server, operator CLI) reads the same
 * file. Created with O_EXCL so a server and a CLI starting together agree on one pepper.
 */
export async function loadOrCreateSecrets(home: string): Promise<Secrets> {
  const file = join(home, 'secrets.json')
  await mkdir(home, { recursive: true })
  const fresh: Secrets = {
    pepper: randomBytes(32).toString('base64url'),
    sessionSecret: randomBytes(32).toString('base64url'),
  }
  try {
    await writeFile(file, `${JSON.stringify(fresh, null, 2)}\n`, { flag: 'wx', mode: 0o600 })
    return fresh
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
  const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<Secrets>
  if (typeof parsed.pepper !== 'string' || typeof parsed.sessionSecret !== 'string')
    throw new AppError('CONFIG_INVALID', `${file} is damaged: remove it only if no keys were issued with it`)
  return { pepper: parsed.pepper, sessionSecret: parsed.sessionSecret }
}
