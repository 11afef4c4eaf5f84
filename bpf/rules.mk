# SPDX-License-Identifier: LGPL-2.1-or-later
# The observer: gcd.bpf.c compiled for BPF (CO-RE, against the vendored
# vmlinux.h), its skeleton generated into $(B)/bpf, and gcd linked with libbpf.
# Plain `make` builds gcd only when clang, bpftool and libbpf are all there;
# `make test` always builds it (scripts/deps.sh installs them).
BPF_CLANG ?= clang
BPFTOOL   ?= $(or $(shell command -v bpftool 2>/dev/null),$(wildcard /usr/sbin/bpftool),bpftool)
BPF_ARCH  := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' \
		-e 's/s390x/s390/' -e 's/riscv64/riscv/')
BPF_CFLAGS := -target bpf -g -O2 -D__TARGET_ARCH_$(BPF_ARCH) -I. -Ibpf -Wall -Wno-unused-function
LIBBPF_CFLAGS := $(shell pkg-config --cflags libbpf 2>/dev/null)
LIBBPF_LIBS   := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz)
GCD_DEPS_OK := $(shell command -v $(BPF_CLANG) >/dev/null 2>&1 && \
		 command -v $(BPFTOOL) >/dev/null 2>&1 && \
		 pkg-config --exists libbpf 2>/dev/null && echo 1)

GCD := $(B)/gcd
GCD_TEST_BINS := $(B)/tests/bpf/test_acct $(B)/tests/bpf/blkcat

# BPF objects: compile, then let bpftool's linker drop the DWARF the
# skeleton would otherwise embed.
$(B)/bpf/%.bpf.o: bpf/%.bpf.c bpf/vmlinux.h bpf/gcd.h bpf/gcd_acct.bpf.h
	$(call msg,BPF,$<)
	@mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o) && rm -f $(@:.o=.tmp.o)
$(B)/tests/bpf/%.bpf.o: tests/bpf/%.bpf.c bpf/vmlinux.h bpf/gcd.h bpf/gcd_acct.bpf.h
	$(call msg,BPF,$<)
	@mkdir -p $(@D)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o) && rm -f $(@:.o=.tmp.o)

$(B)/%.skel.h: $(B)/%.bpf.o
	$(call msg,GENSKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(notdir $*)_bpf > $@

$(GCD): bpf/gcd.c bpf/gcd_sweep.c bpf/gcd_intent.c $(B)/bpf/gcd.skel.h bpf/gcd.h bpf/gcd_pub.h \
		bpf/gcd_sweep.h core/blkstats.h $(B)/journal/intent_fmt.o $(B)/journal/intent_log.o
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B)/bpf $(CFLAGS) $(WARN) $(LIBBPF_CFLAGS) $(DEPFLAGS) \
		$(LDFLAGS) -o $@ bpf/gcd.c bpf/gcd_sweep.c bpf/gcd_intent.c \
		$(B)/journal/intent_fmt.o $(B)/journal/intent_log.o $(LIBBPF_LIBS)

$(B)/tests/bpf/test_acct: tests/bpf/test_acct.c bpf/gcd_sweep.c $(B)/tests/bpf/acct_test.skel.h \
		bpf/gcd.h bpf/gcd_sweep.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -I$(B)/tests/bpf $(CFLAGS) $(WARN) $(LIBBPF_CFLAGS) $(CRIT_CFLAGS) \
		$(DEPFLAGS) -o $@ tests/bpf/test_acct.c bpf/gcd_sweep.c $(LIBBPF_LIBS) $(CRIT_LIBS)

$(B)/tests/bpf/blkcat: tests/bpf/blkcat.c bpf/gcd_pub.h core/blkstats.h
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<

ifeq ($(GCD_DEPS_OK),1)
ALL_BINS += $(GCD) $(GCD_TEST_BINS)
endif
test: $(GCD) $(GCD_TEST_BINS)
TEST_SUITES += $(B)/tests/bpf/test_acct tests/bpf/live.sh

# make vmlinux: regenerate the vendored kernel types from the running kernel
vmlinux:
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h.tmp
	$(Q)mv bpf/vmlinux.h.tmp bpf/vmlinux.h

.PHONY: vmlinux
.SECONDARY: $(B)/bpf/gcd.bpf.o $(B)/bpf/gcd.skel.h $(B)/tests/bpf/acct_test.bpf.o \
	$(B)/tests/bpf/acct_test.skel.h
