#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The power-cut suite of `make test`: a short series of trials under libgc
# (one TAP line each) and the same trials under eatmydata as the control
# (one summary line). Skips when the slow disk cannot run (not root, no FUSE).
set -eu
cd "$(dirname "$0")/../.."
args=(--trials "${CRASH_TRIALS:-15}" --tap)
[ -z "${CRASH_SEED:-}" ] || args+=(--seed "$CRASH_SEED")
exec bash tests/crash/crashtrial "${args[@]}"
