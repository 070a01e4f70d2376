import type { CallToolResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'
import type { TransportRequest } from '../contract/client.ts'
import { previewResult } from '../contract/result-preview.ts'
import { partialOf, summarizeResult } from '../contract/result-text.ts'
import { type ToolSpec, toolRequest } from '../contract/tools.ts'
import { AppError } from '../platform/errors.ts'

/**
 * A successful tool call's MCP result (docs/agents.md): text a model can read (the summary of
 * the whole answer), the structured answer — whole when it fits RESULT_CAP_CHARS, else a preview
 * of the same shape — and, for a preview, links to the full answer. A partial answer says so in
 * the text and in `_partial`.
 */

/** The full answer of a tool call, as a resource: `erm3://answers/<tool>?args=<base64url JSON>&format=`. */
const ANSWERS = 'erm3://answers/'

/** Text forms only: the transport carries text (Parquet is a REST download: format=parquet). */
type AnswerFormat = 'json' | 'csv'

const MIME: Record<AnswerFormat, string> = { json: 'application/json', csv: 'text/csv' }

function answerUri(tool: string, args: Record<string, unknown>, format: AnswerFormat): string {
  const a = Buffer.from(JSON.stringify(args), 'utf8').toString('base64url')
  return `${ANSWERS}${tool}?args=${a}&format=${format}`
}

/** Whether the tool's operation has a tabular form (a `format` field). */
function tabular(tool: ToolSpec): boolean {
  const op = tool.operation
  return [op.querystring, op.body].some(
    (s) => (s as { properties?: Record<string, unknown> } | undefined)?.properties?.format !== undefined,
  )
}

/** The REST request that answers the whole table, spelled for the text. */
function restSpelling(tool: ToolSpec, args: Record<string, unknown>, format: string): string {
  const r = toolRequest(tool, { ...args, format }, 'KEY')
  return `${r.method} ${r.url}${r.body ? ` with body ${r.body}` : ''}`
}

function restHint(tool: ToolSpec, args: Record<string, unknown>): string {
  const format = tabular(tool) ? 'parquet' : 'json'
  const dated = ['start', 'end', 'fields', 'limit', 'cursor'].filter((k) =>
    Object.hasOwn(tool.inputSchema.properties as object, k),
  )
  return (
    `read the resource_link below (resources/read, no charge: this request is already paid on this data), ` +
    `or ask the REST API with the same key: ${restSpelling(tool, args, format)} (free too; format csv or json as well).` +
    (dated.length ? ` To narrow the answer instead, call again with ${dated.join(' / ')}.` : '')
  )
}

export function toolResult(
  tool: ToolSpec,
  args: Record<string, unknown>,
  body: Record<string, unknown>,
): CallToolResult {
  const { body: shown, preview } = previewResult(body)
  const partial = partialOf(body)
  const structured = partial ? { ...shown, _partial: partial } : shown
  const text = summarizeResult(tool.name, body, { preview, rest: preview ? restHint(tool, args) : null })
  const content: CallToolResult['content'] = [{ type: 'text', text }]
  if (preview)
    for (const format of tabular(tool) ? (['csv', 'json'] as const) : (['json'] as const))
      content.push({
        type: 'resource_link',
        uri: answerUri(tool.name, args, format),
        name: `${tool.name}.${format}`,
        mimeType: MIME[format],
        description: `The full answer of this call as ${format.toUpperCase()} (${preview.full_chars} characters as JSON); free: already paid on this data_as_of`,
      })
  return { content, structuredContent: structured }
}

/** The REST request of an `erm3://answers/` resource, or null for another URI. */
export function answerRequest(
  uri: string,
  byName: ReadonlyMap<string, ToolSpec>,
  bearer: string,
): { request: TransportRequest; format: AnswerFormat } | null {
  if (!uri.startsWith(ANSWERS)) return null
  const u = new URL(`http://x/${uri.slice(ANSWERS.length)}`)
  const tool = byName.get(u.pathname.slice(1))
  const format = u.searchParams.get('format') ?? 'json'
  if (!tool || !(format in MIME)) throw new AppError('NOT_FOUND', `unknown resource ${uri}`)
  let args: Record<string, unknown>
  try {
    args = JSON.parse(Buffer.from(u.searchParams.get('args') ?? '', 'base64url').toString('utf8'))
  } catch {
    throw new AppError('INVALID_REQUEST', `resource ${uri}: args is not base64url JSON`)
  }
  const request = toolRequest(tool, { ...args, ...(format === 'json' ? {} : { format }) }, bearer)
  request.headers.accept = MIME[format as AnswerFormat]
  return { request, format: format as AnswerFormat }
}

/** The contents of an answer resource. */
export function answerContents(uri: string, format: AnswerFormat, body: string): ReadResourceResult {
  return { contents: [{ uri, mimeType: MIME[format], text: body }] }
}
