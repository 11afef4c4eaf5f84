# SPDX-License-Identifier: LGPL-2.1-or-later
# End-to-end tests: spy preloads, the durability checker, small programs run
# under LD_PRELOAD, and the Criterion suites that spawn them.
E2E      := $(B)/tests/e2e
E2E_PROG_SRCS := $(filter-out tests/e2e/progs/libctor.c tests/e2e/progs/ctorprog.c \
		 tests/e2e/progs/libsite.c tests/e2e/progs/siteprog.c \
		 tests/e2e/progs/libmcount.c tests/e2e/progs/nextcheck.c, \
		 $(wildcard tests/e2e/progs/*.c))
E2E_PROGS := $(E2E_PROG_SRCS:tests/e2e/progs/%.c=$(E2E)/progs/%) \
	     $(E2E)/progs/libctor.so $(E2E)/progs/ctorprog \
	     $(E2E)/progs/libsite.so $(E2E)/progs/siteprog $(E2E)/progs/libmcount.so \
	     $(E2E)/progs/nextcheck
E2E_TOOLS := $(E2E)/spy_outer.so $(E2E)/spy_inner.so $(E2E)/spycheck $(E2E)/cheat.so
E2E_SUITE_SRCS := $(wildcard tests/e2e/test_*.c)
E2E_SUITES := $(E2E_SUITE_SRCS:%.c=$(B)/%)
# Programs must call exactly the symbols they name: no fortify redirection
# (open -> __open_2) and no 64-bit offset renaming (open -> open64).
E2E_PCFLAGS := $(CPPFLAGS) $(CFLAGS) $(WARN) -U_FORTIFY_SOURCE -U_FILE_OFFSET_BITS

$(E2E)/spy_outer.so: tests/e2e/spy.c tests/e2e/spy.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -fvisibility=hidden -shared -DSPY_OUTER \
		-MMD -MP -MF $@.d -o $@ $< -ldl

$(E2E)/spy_inner.so: tests/e2e/spy.c tests/e2e/spy.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -fvisibility=hidden -shared -DSPY_INNER \
		-MMD -MP -MF $@.d -o $@ $< -ldl

# A sync layer with chosen faults: the checker must catch every one.
$(E2E)/cheat.so: tests/e2e/cheat.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -fvisibility=hidden -shared \
		-MMD -MP -MF $@.d -o $@ $< -ldl

$(E2E)/spycheck: tests/e2e/spycheck_main.c tests/e2e/spycheck.c tests/e2e/spy.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -MF $@.d -o $@ \
		tests/e2e/spycheck_main.c tests/e2e/spycheck.c

$(E2E)/progs/%: tests/e2e/progs/%.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -MMD -MP -MF $@.d -o $@ $< -lpthread

# The real-function lookup alone, against dlsym in the same process.
$(E2E)/progs/nextcheck: tests/e2e/progs/nextcheck.c core/next.c core/next.h shim/syms.def \
			 $(B)/shim/symhash.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -I$(B) -MMD -MP -MF $@.d -o $@ tests/e2e/progs/nextcheck.c core/next.c

# A library whose constructor does synchronous I/O before main (and possibly
# before the preloaded library's own constructor) runs.
$(E2E)/progs/libctor.so: tests/e2e/progs/libctor.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -shared -MMD -MP -MF $@.d -o $@ $<

$(E2E)/progs/ctorprog: tests/e2e/progs/ctorprog.c $(E2E)/progs/libctor.so
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -MMD -MP -MF $@.d -o $@ $< \
		-L$(E2E)/progs -lctor '-Wl,-rpath,$$ORIGIN'

# Call sites: a program whose requests come from a named function of a
# library of its own, and from one of its own.
$(E2E)/progs/libsite.so: tests/e2e/progs/libsite.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -shared -MMD -MP -MF $@.d -o $@ $<

$(E2E)/progs/libmcount.so: tests/e2e/progs/libmcount.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -fPIC -shared -MMD -MP -MF $@.d -o $@ $<

$(E2E)/progs/siteprog: tests/e2e/progs/siteprog.c $(E2E)/progs/libsite.so
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(E2E_PCFLAGS) -MMD -MP -MF $@.d -o $@ $< \
		-L$(E2E)/progs -lsite '-Wl,-rpath,$$ORIGIN' -lpthread -ldl

# One command compiles several sources, so -MMD records only the last one's
# headers: the suites' own includes are listed here.
$(E2E)/test_%: tests/e2e/test_%.c tests/e2e/e2e.c tests/e2e/e2e.h \
		tests/e2e/spycheck.c tests/e2e/spy.h shim/syms.def core/stats.h \
		| $(E2E_PROGS) $(E2E_TOOLS)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(CRIT_CFLAGS) -DE2E_BUILD='"$(B)"' \
		-MMD -MP -MF $@.d -o $@ $< tests/e2e/e2e.c tests/e2e/spycheck.c \
		$(CRIT_LIBS) -lpthread

# The cross-process suites name segments, build segment images and take the
# segment's lock with the library's own domain code, and run the example
# workload.
E2E_DOMAIN_SUITES := $(E2E)/test_shared $(E2E)/test_hardening
$(E2E_DOMAIN_SUITES): $(E2E)/test_%: tests/e2e/test_%.c tests/e2e/e2e.c tests/e2e/e2e.h \
		tests/e2e/spycheck.c tests/e2e/spy.h journal/domain.h policy/policy.h \
		$(B)/journal/domain.o $(B)/journal/segment.o $(B)/policy/policy.o $(B)/core/sys.o $(B)/core/busguard.o \
		| $(E2E_PROGS) $(E2E_TOOLS) $(LIB) $(B)/examples/fsync_storm \
		  $(B)/tests/slowdisk/slowdiskd
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(CRIT_CFLAGS) -DE2E_BUILD='"$(B)"' \
		-MMD -MP -MF $@.d -o $@ $< tests/e2e/e2e.c tests/e2e/spycheck.c \
		$(B)/journal/domain.o $(B)/journal/segment.o $(B)/policy/policy.o $(B)/core/sys.o $(B)/core/busguard.o $(CRIT_LIBS) -lpthread

# The report suite runs the example workload.
$(E2E)/test_report: | $(LIB) $(B)/examples/fsync_storm
# The start-up suite compares the library with an empty preloaded object.
$(E2E)/test_startup: | $(LIB) $(B)/bench/empty.so

e2e: $(E2E_SUITES) $(LIB)
	$(Q)bash tests/run.sh $(E2E_SUITES)

ALL_BINS += $(E2E_TOOLS) $(E2E_PROGS)
PKG_BINS += $(E2E_SUITES)
TEST_SUITES += $(E2E_SUITES)
# The differential error suite: writeback errors on the slow disk, bare and
# under libgc with the dirty limiter at every setting (TAP).
TEST_SUITES += tests/e2e/errors.sh
.PHONY: e2e
TEST_SUITES += tests/e2e/intent.sh
