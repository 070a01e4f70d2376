import type { FastifyBaseLogger } from 'fastify'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
type Emit = (...args: unknown[]) => void
/** pino loggers answer isLevelEnabled; a logger without it is taken to log every level. */
type Logger = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean }

/**
 * A request's logger (`req.log`), made only when something logs through it at an enabled level.
 *
 * Fastify gives every request a pino child bound to its request id; building one (bindings
 * serialised through the redaction rules) is a measurable share of a cheap request, and almost
 * every request logs nothing through it (the access line uses the root logger). Anything that
 * does log still gets the real child with its `reqId` binding, made on first use.
 */
export class LazyChildLogger {
  private made: Logger | null = null

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  get level(): string {
    return this.made?.level ?? this.options?.level ?? this.parent.level
  }

  set level(level: string) {
    this.real().level = level
  }

  fatal(...args: unknown[]): void {
    this.emit('fatal', args)
  }
  error(...args: unknown[]): void {
    this.emit('error', args)
  }
  warn(...args: unknown[]): void {
    this.emit('warn', args)
  }
  info(...args: unknown[]): void {
    this.emit('info', args)
  }
  debug(...args: unknown[]): void {
    this.emit('debug', args)
  }
  trace(...args: unknown[]): void {
    this.emit('trace', args)
  }
  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return this.made ? (this.made.isLevelEnabled?.(level) ?? true) : this.enabled(level)
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.real().child(bindings, options)
  }

  private enabled(level: string): boolean {
    // A route-level override decides in the child; without one the parent's level is the child's.
    return this.options?.level !== undefined || (this.parent.isLevelEnabled?.(level) ?? true)
  }

  private emit(level: Level, args: unknown[]): void {
    if (!this.made && !this.enabled(level)) return
    ;(this.real()[level] as Emit)(...args)
  }

  private real(): Logger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }
}

/** Fastify's `childLoggerFactory`: the lazy child above in place of an eager pino child. */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger
}
