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
    // Core and plugins are read one screen at a time: a file that outgrows 400 lines, a function that
    // outgrows 80 or a line that outgrows 120 characters is split by concern. Blank lines and comments
    // do not count against a file or a function (a comment saying why is never the reason to split);
    // they do against a line, since a long line is long whatever it holds.
    files: ['src/**/*.ts', 'plugins/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
      '@stylistic/max-len': ['error', { code: 120 }]
    }
  },
  // TEMPORARY (issue 42): files other helpers are rewriting at the same time (the dispatcher's split,
  // the generic storage). The lead removes this block when merging their work; nothing else belongs here.
  {
    files: [
      'src/webhooks/dispatcher.ts',
      'src/store/**/*.ts',
      'src/resource.ts',
      'src/resources/**/*.ts'
    ],
    rules: {
      'max-lines': 'off',
      '@stylistic/max-len': 'off'
    }
  }
]
