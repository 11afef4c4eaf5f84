#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The process-per-record power-cut suite of `make test`: each record written
# by a process of its own (exec), which appends it, syncs once and exits,
# the pattern of a delivery agent run per message, under the adaptive policy
# (a process's first sync goes straight to its real call where processes
# sync once). One TAP line a trial, and the same trials under eatmydata as
# the control, which must lose acknowledged records. Skips when the slow
# disk cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(--load once --trials "${CRASH_ONCE_TRIALS:-3}" --tap)
[ -z "${CRASH_SEED:-}" ] || args+=(--seed "$CRASH_SEED")
exec bash tests/crash/crashtrial "${args[@]}"
