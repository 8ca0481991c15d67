/** A validation error names the rule (`body/name must be 1 to 100 characters…`) rather than quote the pattern. */
export const patternMessages = new Map<string, string>()

export function describedPattern (pattern: string, message: string): string {
  patternMessages.set(pattern, message)
  return pattern
}
