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
LIBCFLAGS := -fPIC -fvisibility=hidden -ftls-model=initial-exec

CRIT_CFLAGS := $(shell pkg-config --cflags criterion 2>/dev/null)
CRIT_LIBS   := $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

# The library.  Objects that tests link directly live in CORE_SRCS.
CORE_SRCS  := core/sys.c core/config.c core/fdtable.c core/stats.c core/log.c policy/policy.c \
	      journal/domain.c journal/segment.c
LIB_SRCS   := $(CORE_SRCS) journal/journal.c journal/txn.c journal/commit.c journal/peers.c \
	      journal/fork.c shim/real.c shim/init.c \
	      shim/io.c shim/sync.c shim/open.c shim/exec.c
LIB_OBJS   := $(LIB_SRCS:%.c=$(B)/%.o)
CORE_OBJS  := $(CORE_SRCS:%.c=$(B)/%.o)
LIB        := $(B)/libgc.so

ALL_BINS   := $(LIB)
TEST_SUITES :=

all: deps-check $(LIB) bins

$(B)/%.o: %.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(LIBCFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/libgc.map: shim/syms.def shim/mkmap.sh
	$(Q)mkdir -p $(@D) && sh shim/mkmap.sh $< > $@

$(LIB): $(LIB_OBJS) $(B)/libgc.map
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) -shared -Wl,-z,defs -Wl,--version-script=$(B)/libgc.map \
		-o $@ $(LIB_OBJS) -ldl -lpthread

# Unit tests: Criterion suites linked against the objects, never preloaded.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:%.c=$(B)/%)
$(B)/tests/unit/test_%: tests/unit/test_%.c $(CORE_OBJS)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(CRIT_CFLAGS) $(DEPFLAGS) -o $@ $< \
		$(CORE_OBJS) $(CRIT_LIBS) -lpthread
ALL_BINS   += $(UNIT_BINS)
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

bins: $(ALL_BINS)

deps-check:
	@bash scripts/deps.sh

test: all
	$(Q)bash tests/run.sh $(TEST_SUITES)

demo: all
	$(Q)bash scripts/demo.sh

# Sanitizer builds, in their own build folders: unit tests and the journal
# stress under ASan/UBSan; under TSan only the stress programs, because
# Criterion's runner cannot start under ThreadSanitizer.
ASAN_BINS := $(UNIT_SRCS:%.c=%) $(STRESS_SRCS:%.c=%)
asan:
	$(MAKE) B=build-asan SAN='-fsanitize=address,undefined -fno-omit-frame-pointer' \
		$(addprefix build-asan/,$(ASAN_BINS))
	bash tests/run.sh $(addprefix build-asan/,$(ASAN_BINS))
tsan:
	$(MAKE) B=build-tsan SAN='-fsanitize=thread' $(addprefix build-tsan/,$(STRESS_SRCS:%.c=%))
	TSAN_OPTIONS=halt_on_error=1 bash tests/run.sh $(addprefix build-tsan/,$(STRESS_SRCS:%.c=%))

PREFIX ?= /usr/local
install: $(LIB)
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libgc.so

clean:
	rm -rf build build-asan build-tsan

help:
	@echo 'make            build build/libgc.so, examples and test programs'
	@echo 'make demo       run examples/fsync_storm bare and under libgc, side by side'
	@echo 'make test       unit, end-to-end, slow-disk and crash tests'
	@echo 'make crashtest  TRIALS=N power-cut trials with a summary table'
	@echo 'make bench      base vs libgc vs fsync-disabled (BENCH=full for all rows)'
	@echo 'make bench-ab   bare vs libgc on the machine'"'"'s disk, paired (ABBA and concurrent)'
	@echo 'make asan|tsan  unit tests under AddressSanitizer / ThreadSanitizer'
	@echo 'make install    PREFIX=/usr/local'
	@echo 'V=1             show commands'

.PHONY: all bins test demo asan tsan install clean help deps-check
-include $(shell find $(B) -name '*.d' 2>/dev/null)
