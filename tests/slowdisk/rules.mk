# SPDX-License-Identifier: LGPL-2.1-or-later
# The slow test disk: a FUSE daemon serving a loop device's backing file,
# the probe its self-test drives, and the self-test itself (needs root).
SLOWDISK_BINS := $(B)/tests/slowdisk/slowdiskd $(B)/tests/slowdisk/sdprobe
# Asked on first use (see lazy in the Makefile): after the deps step.
FUSE3_CFLAGS = $(call lazy,FUSE3_CFLAGS,pkg-config --cflags fuse3 2>/dev/null)
FUSE3_LIBS   = $(call lazy,FUSE3_LIBS,pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

$(B)/tests/slowdisk/slowdiskd: tests/slowdisk/slowdiskd.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(FUSE3_CFLAGS) $(DEPFLAGS) -pthread \
		-o $@ $< $(FUSE3_LIBS)

$(B)/tests/slowdisk/sdprobe: tests/slowdisk/sdprobe.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<

# slowdiskd needs libfuse3: built by the targets that use it
ALL_BINS += $(B)/tests/slowdisk/sdprobe
PKG_BINS += $(B)/tests/slowdisk/slowdiskd
TEST_SUITES += tests/slowdisk/selftest.sh
TEST_SUITES += tests/slowdisk/intent_flush.sh
