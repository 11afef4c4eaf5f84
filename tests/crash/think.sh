#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The think-time power-cut suite of `make test`: writers that pause 1-6 ms
# between records on a disk with a 1 ms flush, under the adaptive policy,
# whose outcome check moves them between grouping and timed direct calls
# during the trial (probes included). One TAP line a trial, and the same
# trials under eatmydata as the control, which must lose acknowledged
# records. Skips when the slow disk cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(--load think --trials "${CRASH_THINK_TRIALS:-3}" --tap)
[ -z "${CRASH_SEED:-}" ] || args+=(--seed "$CRASH_SEED")
exec bash tests/crash/crashtrial "${args[@]}"
