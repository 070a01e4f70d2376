import type { ServiceContext } from '../context.ts'
import { issuerOf, SCOPE } from './common.ts'

/** RFC 8414 authorization server metadata; every URL derives from PUBLIC_URL (docs/decisions/oauth.md). */
export function authorizationServerMetadata(ctx: ServiceContext) {
  const issuer = issuerOf(ctx)
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [SCOPE],
    // Every authorization response carries `iss` (RFC 9207): mix-up protection for multi-server agents.
    authorization_response_iss_parameter_supported: true,
  }
}

/** RFC 9728 protected resource metadata: the API (and its MCP server) is the resource. */
export function protectedResourceMetadata(ctx: ServiceContext) {
  const issuer = issuerOf(ctx)
  return {
    resource: ctx.config.publicUrl,
    authorization_servers: [issuer],
    bearer_methods_supported: ['header'],
    scopes_supported: [SCOPE],
    resource_name: 'erm3 equity risk API',
  }
}
