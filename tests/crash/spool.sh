#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The spool power-cut suite of `make test`: a few maildir-style deliveries
# (tmp/, sync, rename into new/, fsync new/) under libgc, one TAP line each,
# and the same trials under eatmydata as the control, which must lose
# acknowledged messages.  Skips when the slow disk cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(--load spool --trials "${CRASH_SPOOL_TRIALS:-4}" --tap)
[ -z "${CRASH_SEED:-}" ] || args+=(--seed "$CRASH_SEED")
exec bash tests/crash/crashtrial "${args[@]}"
