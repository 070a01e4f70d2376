import { type Logger, pino } from 'pino'

export type { Logger }

/**
 * Structured JSON logs on stderr (stdout stays free for command output). Secrets never go in:
 * the redact list covers the header and field names that could carry them. The server's level is
 * LOG_LEVEL (Config.logLevel).
 */
export function createLogger(level = 'info'): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          '*.api_key',
          '*.password',
          '*.token',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination(2),
  )
}
