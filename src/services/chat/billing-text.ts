/**
 * The "Chat" section of GET /docs/billing: how POST /chat is priced, reserved and settled. The
 * rules are the ones of budget.ts, limits.ts and index.ts; test/api/chat.test.ts checks them.
 */
export const CHAT_BILLING_DOC = `## Chat (\`POST /chat\`)
- **Price**: 0.001 USD per 1000 input tokens and 0.002 USD per 1000 output tokens, as the model
  provider reports them (\`prompt_tokens\`, \`completion_tokens\`, summed over the chat's rounds), plus
  every tool call at its own endpoint price (a cached repeat is free, as always).
- **Token charge**: micro-dollars = ⌈(input × 1000 + output × 2000) / 1000⌉ computed once from the
  totals — at these prices exactly input + 2 × output micro-dollars. One ledger row, capability
  \`chat\`; each tool call has its own row under its own capability. \`_agent.cost_usd\` =
  \`llm_cost_usd\` + \`tool_cost_usd\` (the sum of the tool calls' own \`cost_usd\`).
- **Reservation**, as the chat needs it:
  - tokens, before the model is called (402 \`INSUFFICIENT_BALANCE\` otherwise): the input budget ×
    the input price + (max_tool_calls + 1) rounds × max_tokens × the output price. The input budget
    is \`ERM3_CHAT_MAX_INPUT_TOKENS\` (default 200,000; with \`max_tool_calls: 0\`, the bytes of the
    one request). It is enforced by counting the UTF-8 bytes of every request body sent to the
    provider: a byte-level BPE token covers at least one byte, so bytes bound tokens. If the next
    round's request would not fit what is left, no further round starts and the chat answers what
    it has (\`finish_reason: input_budget\`). Each round asks for at most \`max_tokens\` output
    tokens, and at most max_tool_calls + 1 rounds run. With the defaults: 0.2 + 0.008192 =
    0.208192 USD.
  - tools: nothing up front. Each tool call reserves and settles its own exact price on the usual
    metered path right before it runs. When the balance cannot cover the next call, that call is
    refused unrun (its 402 goes to the model), no later tool call runs, the last round answers
    without tools, and a note says so; what ran is charged, nothing more.
  - Only what is used is charged. Lowering \`max_tool_calls\` (or \`max_tokens\`) lowers the token
    reservation; \`tools: [names]\` offers the model only those tools (fewer definitions sent each
    round, fewer input tokens).
- A provider that reports more tokens for a round than its bound (the request's bytes, \`max_tokens\`)
  is charged the bound (and the server logs a warning): never more than reserved.
- **Failures**: a model call that fails (5xx, timeout, unreachable) costs nothing. If it was the
  first round, the chat costs nothing; if earlier rounds succeeded, their tokens and their tool
  calls were served and stay charged, and the 502 / 504 says what was charged (\`charged_usd\`,
  \`llm_cost_usd\`, \`tool_cost_usd\`). A tool's own error is free and goes back to the model.
- **Streaming and disconnects**: when the client goes away no new round or tool call starts; the
  model answer in flight is read to its end (bounded by \`LLM_TIMEOUT_MS\`) and its reported usage
  is charged (streams ask for \`stream_options.include_usage\`). A round for which the provider
  reports no usage is not charged.
- **Test keys** chat for free (no reservation, no ledger row; the tools read the sandbox) and never
  reach the provider: erm3's own deterministic sandbox model answers them (the text starts with
  \`[sandbox]\`; for a sandbox ticker it first calls the \`metrics\` tool), its tokens estimated at
  4 bytes a token, and their token limit is stricter (at most 20,000 a minute).
- **Limits**, per key: \`ERM3_CHAT_RPM\` chats (default 10) and \`ERM3_CHAT_TPM\` tokens (default
  100,000, counted in thousands) a minute, 429 \`RATE_LIMITED\` with \`Retry-After\`. A chat is admitted
  while the key's token bucket is not empty; its tokens are taken once the provider has reported
  them. Every tool call also takes a token of the key's general rate limit, as a REST call does.
  No round starts that could end more than 8 minutes after the request arrived
  (\`finish_reason: time_budget\`), so a reservation never outlives the ledger's 10-minute
  reconcile of abandoned ones.
`
