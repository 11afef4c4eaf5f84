#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The intent log's power-cut suite of `make test`: a few record trials
# under libgc with LIBGC_INTENT (a small log that laps, records overwritten
# in place in some, a cut during recovery in some), recovered before each
# check, one TAP line each; and their controls under eatmydata, which must
# lose. Skips when the slow disk cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(--intent --trials "${CRASH_INTENT_TRIALS:-4}" --tap)
[ -z "${CRASH_SEED:-}" ] || args+=(--seed "$CRASH_SEED")
exec bash tests/crash/crashtrial "${args[@]}"
