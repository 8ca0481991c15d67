import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'

// The Fastify ecosystem's style (neostandard), TypeScript-aware, over every source file of the repo
// (the generated client types excepted: openapi-typescript writes them).
export default [
  ...neostandard({
    ts: true,
    ignores: [...resolveIgnoresFromGitignore(), 'client/plant-store-api.ts']
  }),
  {
    rules: {
      // `void reply.header(...)` marks a reply method's returned chain as deliberately unused, as
      // Fastify's own TypeScript examples do; `void` as a value stays an error.
      'no-void': ['error', { allowAsStatement: true }]
    }
  },
  {
    // A store's decisions are read one at a time: a function that outgrows a screen is split by concern.
    files: ['src/store/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }]
    }
  }
]
