#!/usr/bin/env bash
# `npm test`: every test file (compiled to build/ by `npm run build:test`) under c8's coverage gate
# (thresholds in .c8rc.json). Tests that need a real PostgreSQL or Redis run only when
# TEST_DATABASE_URL or TEST_REDIS_URL names one; so on a machine with nothing but Node.js the suite
# passes, and the code only a PostgreSQL run reaches (the PostgreSQL store and the sandbox's
# PostgreSQL backend) is measured only when those tests run: it would otherwise count as code
# without tests, and the same gate holds in both modes.
set -euo pipefail
cd "$(dirname "$0")/.."
# The files that start child processes alone, the rest shared out among a few processes
# (scripts/test-plan.ts says why).
mapfile -t files < <(node build/scripts/test-plan.js 6 $(find test -name '*.test.ts'))
exclude=()
skipped=()
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  exclude=(--exclude 'build/src/store/postgres/**' --exclude 'build/src/sandbox/postgres-tenants.js')
  skipped+=('the PostgreSQL tests (export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them)')
fi
if [ -z "${TEST_REDIS_URL:-}" ]; then
  skipped+=('the Redis tests (export TEST_REDIS_URL=redis://127.0.0.1:6379 to run them)')
fi
say_skipped () {
  for what in "${skipped[@]}"; do echo "npm test: skipped ${what}"; done
}
say_skipped
# Files in parallel, one more than the cores: much of a file's time is spent waiting on its child
# processes, PostgreSQL and timers (node's default, cores - 1, ran one file at a time on 2 cores).
concurrency=$(( $(nproc) + 1 ))
status=0
npx c8 "${exclude[@]}" node --test --test-concurrency="$concurrency" "${files[@]}" || status=$?
# Said again after the summary, where a reader looks last.
say_skipped
exit "$status"
