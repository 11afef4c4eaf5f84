# SPDX-License-Identifier: LGPL-2.1-or-later
# Real programs under libgc (examples/recipes): `make recipes` runs every
# recipe bare, under libgc and under eatmydata on 1 ms and 4 ms slow disks
# (root, a few minutes); `make compat` runs other projects' own test suites
# bare and under libgc and compares (about ten minutes).  Neither is part of
# `make test`.
recipes: $(LIB) $(B)/tests/slowdisk/slowdiskd
	$(Q)bash scripts/deps.sh recipes
	$(Q)bash examples/recipes/all.sh

compat: $(LIB)
	$(Q)bash scripts/deps.sh compat
	$(Q)bash examples/recipes/compat.sh

# make test checks lib.sh's table code (a failed run shows in its row, the
# header names the library and settings measured)
# with a stand-in run: no program, no disk.
TEST_SUITES += tests/tools/recipes.sh

.PHONY: recipes compat
