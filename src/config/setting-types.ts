import { Type, type TInteger, type TString, type TUnsafe } from '@sinclair/typebox'

/** Settings read as one line each: their bounds and default, then what they mean (the docs' text). */
export const integerSetting = (
  bounds: { minimum: number, maximum?: number, default?: number }, description: string
): TInteger => Type.Integer({ ...bounds, description })

export const stringSetting = (options: { minLength?: number, default?: string }, description: string): TString =>
  Type.String({ ...options, description })

/** A `0`/`1` setting: an enum, so a typo (`true`, `yes`) stops the start rather than read as either. */
export const flagSetting = (defaultValue: '0' | '1', description: string): TUnsafe<'0' | '1'> =>
  Type.Unsafe<'0' | '1'>({ type: 'string', enum: ['0', '1'], default: defaultValue, description })
