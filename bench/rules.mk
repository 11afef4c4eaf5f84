# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench`: base vs libgc vs policy=none vs fsync disabled, side by side,
# on the machine's disk and a slow disk, with a table and a plot.  The micro
# benchmark is built with everything else (no $(SAN): it runs preloaded).
BENCH_BINS := $(B)/bench/microbench $(B)/bench/spawnloop $(B)/bench/empty.so \
	      $(B)/bench/shapes

$(B)/bench/microbench: bench/microbench.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -pthread -o $@ $<

# What a preloaded library costs a short process: spawnloop runs a command
# under two preloads, run by run in alternation; empty.so is the baseline,
# an object with nothing in it.
$(B)/bench/spawnloop: bench/spawnloop.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<
$(B)/bench/empty.so: bench/empty.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fPIC -shared -o $@ $<

$(B)/bench/shapes: bench/shapes.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -pthread -o $@ $< -lm

ALL_BINS += $(BENCH_BINS)

# `make bench-start`: what loading libgc costs a process that never syncs.
bench-start: all
	$(Q)bash bench/startup.sh

.PHONY: bench-start
# bench/ab.sh's input checks and a tiny run (no timing asserted)
TEST_SUITES += bench/selftest.sh

# BENCH=smoke|quick|full (quick by default); see bench/README.md.
bench: deps all $(B)/tests/slowdisk/slowdiskd
	$(Q)BENCH='$(BENCH)' bash bench/bench.sh

.PHONY: bench

# bare vs libgc on the machine's disk, paired two ways (ABBA blocks and
# concurrent runs) for differences of a few percent; see bench/README.md.
bench-ab: all
	$(Q)bash bench/ab.sh

.PHONY: bench-ab

# `make bench-dirty`: a reader of cold small files while one writer streams,
# bare and under libgc, with and without gcd; see bench/dirty.sh.
DIRTY_BENCH_BINS := $(B)/bench/coldread $(B)/bench/streamw
$(B)/bench/coldread: bench/coldread.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<
$(B)/bench/streamw: bench/streamw.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<
ALL_BINS += $(DIRTY_BENCH_BINS)

bench-dirty: deps all $(B)/tests/slowdisk/slowdiskd
	$(Q)bash bench/dirty.sh

.PHONY: bench-dirty

# `make bench-shapes [SHAPES=quick]`: bare, the default, policy=none and a
# sweep of fixed waits per shape of work on the 1 ms and 4 ms slow disks;
# see bench/README.md.
bench-shapes: deps all $(B)/tests/slowdisk/slowdiskd
	$(Q)SHAPES='$(SHAPES)' bash bench/shapes.sh

.PHONY: bench-shapes
