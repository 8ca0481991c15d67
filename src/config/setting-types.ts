import { Type, type TInteger, type TString } from '@sinclair/typebox'

/** Settings read as one line each: their bounds and default, then what they mean (the docs' text). */
export const integerSetting = (
  bounds: { minimum: number, maximum?: number, default?: number }, description: string
): TInteger => Type.Integer({ ...bounds, description })

export const stringSetting = (options: { minLength?: number, default?: string }, description: string): TString =>
  Type.String({ ...options, description })
