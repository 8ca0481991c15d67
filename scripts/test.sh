#!/usr/bin/env bash
# `npm test`: every test file (compiled to build/ by `npm run build:test`) under c8's coverage gate
# (thresholds in .c8rc.json). The PostgreSQL store is measured only when its tests run
# (TEST_DATABASE_URL set); otherwise it would count as code without tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# The files that start child processes alone, the rest shared out among a few processes
# (scripts/test-plan.ts says why).
mapfile -t files < <(node build/scripts/test-plan.js 6 $(find test -name '*.test.ts'))
exclude=()
if [ -z "${TEST_DATABASE_URL:-}" ]; then exclude=(--exclude 'build/src/store/postgres/**'); fi
# Files in parallel, one more than the cores: much of a file's time is spent waiting on its child
# processes, PostgreSQL and timers (node's default, cores - 1, ran one file at a time on 2 cores).
concurrency=$(( $(nproc) + 1 ))
exec npx c8 "${exclude[@]}" node --test --test-concurrency="$concurrency" "${files[@]}"
