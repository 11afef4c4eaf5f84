# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian packages, built, installed beside Boehm GC's libgc-dev, used and
# purged (root; installs its tools with scripts/deps.sh deb, else skips).
TEST_SUITES += tests/pkg/deb.sh
