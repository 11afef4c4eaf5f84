# SPDX-License-Identifier: LGPL-2.1-or-later
# Power-cut trials: the workload and checker programs, the short TAP suite
# for `make test`, and `make crashtest TRIALS=N` with a summary table.
CRASH_BINS := $(B)/tests/crash/crashload $(B)/tests/crash/crashcheck

$(B)/tests/crash/%: tests/crash/%.c tests/crash/record.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< -lpthread -lm

ALL_BINS    += $(CRASH_BINS)
TEST_SUITES += tests/crash/run.sh tests/crash/spool.sh tests/crash/once.sh tests/crash/think.sh \
	       tests/crash/intent.sh tests/crash/intent_race.sh \
	       tests/crash/intent_cases.sh tests/crash/intent_eio.sh

TRIALS ?= 10
# Every filesystem the slow disk makes (CRASH_FS="xfs" for one).
CRASH_FS ?= ext4 ext4-fc xfs btrfs
# The loads on each filesystem: records appended to files, messages
# delivered to a spool, records written by a process each, records by
# writers that pause between them (think). Every series
# runs; the target fails if one did.
# INTENT=1: libgc with its intent log, recovered before each check.
# ext4 with fast commits loses fsynced data at a power cut bare on this disk
# (tests/crash/README.md): its series also run bare, and one whose library
# losses come with bare losses is reported as not judged (status 3).
CRASH_INTENT = $(if $(filter 1,$(INTENT)),--intent)
CRASH_ARGS = --trials $(TRIALS) $(if $(SEED),--seed $(SEED)) $(CRASH_INTENT)
crash_one = bash tests/crash/crashtrial --fs $$fs $(1) $(CRASH_ARGS) \
	$$([ $$fs = ext4-fc ] && echo --bare) || { r=$$?; [ $$r = 3 ] || rc=1; }
crashtest: deps $(CRASH_BINS) $(LIB) $(B)/gcrun $(B)/tests/slowdisk/slowdiskd
	$(Q)rc=0; for fs in $(CRASH_FS); do \
		$(call crash_one,); \
		$(call crash_one,--load spool); \
		$(call crash_one,--load once); \
		$(call crash_one,--load think); \
	done; exit $$rc

crashtest-spool: deps $(CRASH_BINS) $(LIB) $(B)/tests/slowdisk/slowdiskd
	$(Q)rc=0; for fs in $(CRASH_FS); do \
		$(call crash_one,--load spool); \
	done; exit $$rc

.PHONY: crashtest crashtest-spool

# Injected EIO under the library on the slow disk: the load and its checks.
$(B)/tests/crash/eioload: tests/crash/eioload.c tests/e2e/spy.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< -lpthread -lm

ALL_BINS    += $(B)/tests/crash/eioload
TEST_SUITES += tests/crash/eio.sh
# The filesystem-dependent suites on ext4 with fast commits, xfs and btrfs:
# a short pass in make test, every suite on every filesystem in crashtest-fs.
TEST_SUITES += tests/crash/fs.sh

crashtest-fs: deps $(CRASH_BINS) $(LIB) $(B)/tests/slowdisk/slowdiskd $(B)/tests/crash/eioload \
	      test-bins
	$(Q)FS_PASS=full bash tests/crash/fs.sh

.PHONY: crashtest-fs
