/**
 * What a regular expression in a schema means, in words: a validation error names the rule
 * (`body/name must be 1 to 100 characters…`) instead of quoting the pattern.
 */
export const patternMessages = new Map<string, string>()

/** Records the message for a pattern and returns the pattern, for use inside a schema. */
export function describedPattern (pattern: string, message: string): string {
  patternMessages.set(pattern, message)
  return pattern
}
