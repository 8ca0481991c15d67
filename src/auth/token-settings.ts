import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { ConfigError } from '../lib/errors.js'
import { DEFAULT_SCOPES, type Scope } from './scopes.js'
import { tokenDigest, type NamedToken } from './tokens.js'

/** The tokens of API_TOKENS and API_TOKENS_FILE: plain ones (every scope, API_TOKENS first) and named ones. */
export function configuredTokens (
  apiTokens: string | undefined, tokensFile: string | undefined
): { plain: string[], named: NamedToken[] } {
  const file = readTokensFile(tokensFile)
  const plain = [...splitTokens(apiTokens), ...file.plain]
  refuseOverlap(plain, file.named)
  return { plain, named: file.named }
}

const TOKEN_SETTINGS = ['API_TOKENS', 'API_TOKENS_FILE'] as const

/**
 * `API_TOKENS=` (an empty Kubernetes Secret, say) is refused before an empty value reads as unset: emptying the
 * list is how a key is revoked, and unset could make up a token with every scope.
 */
export function refuseEmptyTokenSettings (env: NodeJS.ProcessEnv): void {
  for (const setting of TOKEN_SETTINGS) {
    if (env[setting] !== undefined && env[setting].trim() === '') {
      throw new ConfigError(`invalid configuration: ${setting} is set but holds no token (unset it to have none)`)
    }
  }
}

/** What a configuration accepts callers with: with none of these, nothing can call the API. */
interface TokenSources {
  tokens: string[]
  namedTokens: readonly NamedToken[]
  oidc?: unknown
  sandbox?: unknown
  tokenGenerated: boolean
}

/**
 * With no token, no OIDC_ISSUER and no sandbox, a token is made up for the run only for a person at a terminal
 * (stdout and stderr both): anywhere else it would land in a log, and nothing could use it; the start stops there.
 */
export function withTrialToken<C extends TokenSources> (config: C, terminal: boolean): C {
  if (config.tokens.length > 0 || config.namedTokens.length > 0 || config.oidc !== undefined ||
    config.sandbox !== undefined) return config
  if (!terminal) {
    throw new ConfigError('invalid configuration: no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER is set, so nothing ' +
      'could call the API (a token is made up for a trial run only at a terminal; plant-store token prints one)')
  }
  return { ...config, tokens: [randomBytes(32).toString('base64url')], tokenGenerated: true }
}

/** A setting that names no token (only separators) is refused, as refuseEmptyTokenSettings says why. */
function splitTokens (text: string | undefined): string[] {
  if (text === undefined) return []
  const tokens = text.split(',').map((token) => token.trim()).filter((token) => token !== '')
  if (tokens.length === 0) {
    throw new ConfigError('invalid configuration: API_TOKENS is set but holds no token (unset it to have none)')
  }
  return tokens.map(checkedToken)
}

/** A token travels in an HTTP header: only visible ASCII, as RFC 6750's b64token allows. */
function checkedToken (token: string): string {
  if (/^[A-Za-z0-9\-._~+/]+=*$/.test(token)) return token
  throw new ConfigError(
    'invalid configuration: a token may only hold the characters A-Z a-z 0-9 - . _ ~ + / and trailing ='
  )
}

/** A named entry's name: what the access log shows and its data is kept under. */
export function checkTokenName (name: string, problem: (what: string) => Error): void {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw problem('a name is 1 to 64 of A-Z a-z 0-9 . _ -')
}

/** A named entry's scopes, each once. */
export function namedScopes (names: readonly string[], problem: (what: string) => Error): Scope[] {
  const unknown = names.find((scope) => !DEFAULT_SCOPES.isScope(scope))
  if (unknown !== undefined) {
    throw problem(`unknown scope ${JSON.stringify(unknown)} (known: ${DEFAULT_SCOPES.scopes.join(', ')})`)
  }
  return [...new Set(names as Scope[])]
}
const DIGEST = /^sha256:([0-9a-fA-F]{64})$/

/**
 * One entry a line: a plain token (every scope), or `<name> <scope>[,<scope>…] sha256:<hex digest>` (what
 * `plant-store token` prints), which holds no token. Blank lines and `#` comments (no token starts so) are skipped.
 */
function readTokensFile (path: string | undefined): { plain: string[], named: NamedToken[] } {
  if (path === undefined) return { plain: [], named: [] }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(
      `invalid configuration: API_TOKENS_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}: ` +
      `${path})`
    )
  }
  const plain: string[] = []
  const named: NamedToken[] = []
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const fields = line.split(/\s+/)
    if (fields.length === 1) {
      plain.push(checkedToken(line))
      return
    }
    const problem = (what: string) =>
      new ConfigError(`invalid configuration: API_TOKENS_FILE line ${index + 1}: ${what}`)
    const [name = '', scopeList = '', digestField = ''] = fields
    if (fields.length !== 3) {
      throw problem('a named entry is "<name> <scope>[,<scope>…] sha256:<hex digest>" (plant-store token prints one)')
    }
    checkTokenName(name, problem)
    // `ro` and `RO` would be two principals that a person (and a log search) takes for one.
    const same = named.find((entry) => entry.name.toLowerCase() === name.toLowerCase())
    if (same?.name === name) throw problem(`the name ${name} is used twice`)
    if (same !== undefined) throw problem(`the names ${same.name} and ${name} differ only in case`)
    const scopes = namedScopes(scopeList.split(','), problem)
    const digest = DIGEST.exec(digestField)?.[1]?.toLowerCase()
    if (digest === undefined) throw problem('the third field is sha256: and the token\'s 64 hex digit SHA-256')
    const twin = named.find((entry) => entry.digest === digest)
    if (twin !== undefined) throw problem(`the same token digest as the entry ${twin.name}`)
    named.push({ name, scopes, digest })
  })
  if (plain.length === 0 && named.length === 0) {
    throw new ConfigError(`invalid configuration: API_TOKENS_FILE holds no token (${path}); with no token nothing ` +
      'can call the API')
  }
  return { plain, named }
}

/** A plain token (every scope) that is also a named entry would get one of the two scope sets silently. */
function refuseOverlap (plain: readonly string[], named: readonly NamedToken[]): void {
  for (const token of plain) {
    const digest = tokenDigest(token)
    const entry = named.find((candidate) => candidate.digest === digest)
    if (entry !== undefined) {
      throw new ConfigError(`invalid configuration: the API_TOKENS_FILE entry ${entry.name} is also given as a plain ` +
        'token (every scope): keep one of the two')
    }
  }
}
