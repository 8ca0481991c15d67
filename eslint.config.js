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
    // Every file is read one screen wide, tests, benchmarks and scripts too: a line that outgrows 120
    // characters is broken, whatever it holds (a comment or a test's name as much as code).
    rules: {
      '@stylistic/max-len': ['error', { code: 120 }]
    }
  },
  {
    // Core and plugins are read one screen at a time: a file that outgrows 400 lines or a function that
    // outgrows 80 is split by concern. Blank lines and comments do not count against either (a comment
    // saying why is never the reason to split).
    files: ['src/**/*.ts', 'plugins/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }]
    }
  }
]
