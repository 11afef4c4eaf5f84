# Power-cut trials: the workload and checker programs, the short TAP suite
# for `make test`, and `make crashtest TRIALS=N` with a summary table.
CRASH_BINS := $(B)/tests/crash/crashload $(B)/tests/crash/crashcheck

$(B)/tests/crash/%: tests/crash/%.c tests/crash/record.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< -lpthread

ALL_BINS    += $(CRASH_BINS)
TEST_SUITES += tests/crash/run.sh tests/crash/spool.sh tests/crash/intent.sh

TRIALS ?= 10
# Both loads: records appended to files, then messages delivered to a spool.
# INTENT=1: libgc with its intent log, recovered before each check.
crashtest: deps $(CRASH_BINS) $(LIB) $(B)/gcrun $(B)/tests/slowdisk/slowdiskd
	$(Q)bash tests/crash/crashtrial --trials $(TRIALS) $(if $(SEED),--seed $(SEED)) \
		$(if $(filter 1,$(INTENT)),--intent)
	$(Q)bash tests/crash/crashtrial --load spool --trials $(TRIALS) $(if $(SEED),--seed $(SEED)) \
		$(if $(filter 1,$(INTENT)),--intent)

crashtest-spool: deps $(CRASH_BINS) $(LIB) $(B)/tests/slowdisk/slowdiskd
	$(Q)bash tests/crash/crashtrial --load spool --trials $(TRIALS) $(if $(SEED),--seed $(SEED))

.PHONY: crashtest crashtest-spool

# Injected EIO under the library on the slow disk: the load and its checks.
$(B)/tests/crash/eioload: tests/crash/eioload.c tests/e2e/spy.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< -lpthread

ALL_BINS    += $(B)/tests/crash/eioload
TEST_SUITES += tests/crash/eio.sh
