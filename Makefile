# SPDX-License-Identifier: LGPL-2.1-or-later
# libgc — group commit for unmodified programs.  `make help` lists targets.
.DELETE_ON_ERROR:
.SUFFIXES:

B       := build
CC      ?= cc
ifeq ($(origin CC),default)
CC      := gcc
endif
V       ?= 0
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes
CFLAGS  ?= -O2 -g
CPPFLAGS += -I. -D_GNU_SOURCE
DEPFLAGS = -MMD -MP
SAN     ?=
OBJCOPY ?= objcopy
LIBCFLAGS := -fPIC -fvisibility=hidden -ftls-model=initial-exec -ffunction-sections

# Flags of packages that plain `make` does not need, asked of pkg-config on
# first use in a recipe (then kept): by then the deps step of the target
# that builds those programs has installed the package.
lazy = $(eval $(1) := $$(shell $(2)))$($(1))
CRIT_CFLAGS = $(call lazy,CRIT_CFLAGS,pkg-config --cflags criterion 2>/dev/null)
CRIT_LIBS   = $(call lazy,CRIT_LIBS,pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

# The library.  Objects that tests link directly live in CORE_SRCS.
CORE_SRCS  := core/sys.c core/next.c core/busguard.c core/config.c core/fdtable.c core/stats.c core/log.c core/procstats.c policy/policy.c \
	      policy/dirty.c core/dirty.c \
	      journal/domain.c journal/segment.c core/devstats.c journal/txn.c journal/commit.c journal/fs.c \
	      journal/peers.c journal/intent_fmt.c journal/intent_log.c
LIB_SRCS   := $(CORE_SRCS) journal/journal.c journal/intent.c \
	      journal/fork.c core/sites.c shim/real.c shim/init.c shim/report.c \
	      shim/io.c shim/sync.c shim/open.c shim/exec.c shim/meta.c
# After the functions of core/first.list (the object rule below), link
# order is text order: what only some processes reach (group commit, the
# dirty limiter, the intent log, reports, call sites, exec) last.
LIB_LATE   := journal/intent.c shim/report.c core/sites.c journal/txn.c core/dirty.c \
	      journal/intent_log.c journal/intent_fmt.c shim/exec.c journal/peers.c
LIB_OBJS   := $(patsubst %.c,$(B)/%.o,$(filter-out $(LIB_LATE),$(LIB_SRCS)) $(LIB_LATE))
# Code a process runs once (parsing the settings, setting up its stats,
# the exit report, call sites, exec, the intent log's file) is built for
# size: a third smaller.
LIB_ONCE   := core/config.c core/procstats.c shim/report.c core/sites.c shim/exec.c \
	      journal/intent_log.c
$(LIB_ONCE:%.c=$(B)/%.o): CFLAGS += -Os
CORE_OBJS  := $(CORE_SRCS:%.c=$(B)/%.o)
LIB        := $(B)/libgc.so
# The file keeps the name users know; its soname is one that no other
# library has, so that even a loader cache built over its directory could
# never hand it out for Boehm GC's libgc.so.1 (nor Boehm's for it).
SONAME     := libgc-commit.so
VERSION    ?= 0.1
$(B)/shim/init.o: CPPFLAGS += -DGC_VERSION='"$(VERSION)"'

# ALL_BINS need a C toolchain only and are built by plain `make`; PKG_BINS
# need Criterion or FUSE and are built only by the targets that run them.
ALL_BINS   := $(LIB)
PKG_BINS   :=
TEST_SUITES :=

all: $(LIB) bins

# Each function in its own section; those that short processes run
# (core/first.list, made by scripts/textorder.sh) renamed into the linker's
# .text.sorted.*, which it puts at the front of the text in the list's
# order, after the start-up, fork and exit code (GC_ONCE): together they
# fill the first 64 KiB the kernel maps at a fault, where linked file by
# file they took every window of the library's code. A "late" line moves
# start-up code that none of them ran (.text.unlikely.X) to the back.
$(B)/%.o: %.c $(B)/first.args
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(LIBCFLAGS) $(DEPFLAGS) -c $< -o $@
	$(Q)$(OBJCOPY) @$(B)/first.args $@

$(B)/first.args: core/first.list
	$(Q)mkdir -p $(@D) && awk '/^#/ || !NF { next } \
		$$1 == "late" { printf "--rename-section .text.unlikely.%s=.text.%s\n", $$2, $$2; next } \
		{ n++; printf "--rename-section .text.%s=.text.sorted.%04d.%s\n", $$1, n, $$1 }' $< > $@

$(B)/libgc.map: shim/syms.def shim/mkmap.sh
	$(Q)mkdir -p $(@D) && sh shim/mkmap.sh $< > $@

# The names' hashes for the start-up lookup, made once here (shim/real.c).
$(B)/shim/symhash.h: shim/syms.def shim/mkhash.sh
	$(Q)mkdir -p $(@D) && sh shim/mkhash.sh $< > $@
$(B)/shim/real.o: $(B)/shim/symhash.h
$(B)/shim/real.o: CPPFLAGS += -I$(B)

# core/start.ld: the data every process touches at start-up and exit on one
# page. -fini names no function, so there is no DT_FINI: glibc's _fini is
# empty, and calling it at exit cost a page fault at the end of the text.
$(LIB): $(LIB_OBJS) $(B)/libgc.map core/start.ld
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -shared -Wl,-z,defs -Wl,--version-script=$(B)/libgc.map \
		-Wl,-T,core/start.ld -Wl,-fini=gc_no_fini \
		-Wl,-soname,$(SONAME) -o $@ $(LIB_OBJS) -ldl -lpthread

# Unit tests: Criterion suites linked against the objects, never preloaded.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:%.c=$(B)/%)
$(B)/tests/unit/test_%: tests/unit/test_%.c $(CORE_OBJS)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(CRIT_CFLAGS) $(DEPFLAGS) -o $@ $< \
		$(CORE_OBJS) $(CRIT_LIBS) -lpthread
PKG_BINS   += $(UNIT_BINS)
TEST_SUITES += $(UNIT_BINS)

# Stress programs: the wrappers linked in (not preloaded) so sanitizers see
# the journal's threads; they print TAP.
STRESS_SRCS := $(wildcard tests/stress/stress_*.c)
STRESS_BINS := $(STRESS_SRCS:%.c=$(B)/%)
$(B)/tests/stress/stress_%: tests/stress/stress_%.c $(LIB_OBJS)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< $(LIB_OBJS) \
		-ldl -lpthread
ALL_BINS   += $(STRESS_BINS)
TEST_SUITES += $(STRESS_BINS)

# Fragments: each part of the tree adds its programs to ALL_BINS and its
# suites (Criterion binaries, or scripts printing TAP) to TEST_SUITES.
-include examples/rules.mk
-include tests/e2e/rules.mk
-include tests/slowdisk/rules.mk
-include tests/crash/rules.mk
-include bench/rules.mk
-include bpf/rules.mk
-include tools/rules.mk
-include examples/recipes/rules.mk
-include tests/pkg/rules.mk
-include install.mk

bins: $(ALL_BINS)
test-bins: $(ALL_BINS) $(PKG_BINS)

# The packages (scripts/deps.sh: a no-op when all are there, apt-get when
# some are missing) come first in the targets that need them and before every
# program in PKG_BINS; plain `make` never runs it.  The flags of those
# packages are asked for on first use in a recipe, so after this step.
# `make demo` adds fs_mark, `make bench` and `make deps` the benchmark tools.
deps_set := $(if $(filter bench bench-dirty bench-shapes deps,$(MAKECMDGOALS)),bench,$(if $(filter demo,$(MAKECMDGOALS)),demo))
deps:
	$(Q)bash scripts/deps.sh $(deps_set)$(demo_deps_ok)
$(PKG_BINS): | deps

test: deps all test-bins
	$(Q)bash tests/run.sh $(TEST_SUITES)

# Without root the demo runs on this disk only: it needs neither the slow
# disk's daemon nor packages it could not install.
is_root := $(filter 0,$(shell id -u))
demo_deps_ok := $(if $(is_root),,$(if $(filter demo,$(MAKECMDGOALS)), || true))
demo: deps all $(if $(is_root),$(B)/tests/slowdisk/slowdiskd)
	$(Q)bash scripts/demo.sh

# Sanitizer builds, in their own build folders: unit tests and the journal
# stress under ASan/UBSan; under TSan only the stress programs, because
# Criterion's runner cannot start under ThreadSanitizer.
ASAN_BINS := $(UNIT_SRCS:%.c=%) $(STRESS_SRCS:%.c=%)
asan: deps
	$(MAKE) B=build-asan SAN='-fsanitize=address,undefined -fno-omit-frame-pointer' \
		$(addprefix build-asan/,$(ASAN_BINS))
	bash tests/run.sh $(addprefix build-asan/,$(ASAN_BINS))
tsan:
	$(MAKE) B=build-tsan SAN='-fsanitize=thread' $(addprefix build-tsan/,$(STRESS_SRCS:%.c=%))
	TSAN_OPTIONS=halt_on_error=1 bash tests/run.sh $(addprefix build-tsan/,$(STRESS_SRCS:%.c=%))

clean:
	rm -rf build build-asan build-tsan

help:
	@echo 'make            build/libgc.so and the tools (no packages beyond a C toolchain)'
	@echo 'make bins       the same as plain make'
	@echo 'make test-bins  every test program too (installs Criterion and FUSE first)'
	@echo 'make test       unit, end-to-end, slow-disk, power-cut, observer and package tests (root for the disk parts; ~9 min)'
	@echo 'make e2e        only the end-to-end suites'
	@echo 'make demo       bare vs libgc on a 1 ms and a 4 ms slow disk and this disk (~2 min, root)'
	@echo 'make bench      base vs libgc vs policy=none vs fsync off (BENCH=smoke|quick|full)'
	@echo 'make bench-ab   bare vs libgc on this disk, paired (sequential ABBA and concurrent), for small gaps'
	@echo 'make bench-start what loading libgc costs a process that never syncs, against an empty preload'
	@echo 'make recipes    real programs (SQLite, PostgreSQL, MariaDB, Redis, maildir, git, Berkeley DB, fio) bare vs libgc on slow disks (root)'
	@echo 'make compat     Python'"'"'s and SQLite'"'"'s own test suites, bare and under libgc (~10 min)'
	@echo 'make bench-dirty a cold-file reader vs one streaming writer, bare and libgc, with and without gcd (~3 min, root)'
	@echo 'make bench-shapes the policy on 18 shapes of work, bare vs default vs none vs fixed waits (~1 h; SHAPES=quick ~10 min, root)'
	@echo 'make crashtest  TRIALS=N [SEED=S] power-cut trials (records, a mail spool, a process a record) with a summary table'
	@echo 'make crashtest-spool  TRIALS=N the spool trials only'
	@echo 'make asan       unit tests and the journal stress under AddressSanitizer/UBSan'
	@echo 'make tsan       the journal stress under ThreadSanitizer'
	@echo 'make deps       install every package the targets use (scripts/deps.sh bench)'
	@echo 'make install    libgc.so (in $$(PKGLIBDIR), a directory of its own), gcrun, gcstat, man pages,'
	@echo '                and gcd with its unit when built (PREFIX=/usr/local, DESTDIR; see install.mk)'
	@echo 'make uninstall  remove what make install installed (the same variables)'
	@echo 'make deb        Debian packages libgc-commit and libgc-commit-gcd into build/deb, and lintian'
	@echo 'make spdx       check every source file'"'"'s SPDX line (scripts/spdx.sh --add adds them)'
	@echo 'make vmlinux    regenerate bpf/vmlinux.h from this kernel'"'"'s BTF'
	@echo 'make clean      remove build, build-asan and build-tsan'
	@echo 'make help       this list'
	@echo 'V=1             show the commands'

.PHONY: all bins test-bins test demo asan tsan clean help deps
-include $(shell find $(B) -name '*.d' 2>/dev/null)
