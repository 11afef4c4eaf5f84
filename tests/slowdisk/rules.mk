# The slow test disk: a FUSE daemon serving a loop device's backing file,
# the probe its self-test drives, and the self-test itself (needs root).
SLOWDISK_BINS := $(B)/tests/slowdisk/slowdiskd $(B)/tests/slowdisk/sdprobe
FUSE3_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE3_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

$(B)/tests/slowdisk/slowdiskd: tests/slowdisk/slowdiskd.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(FUSE3_CFLAGS) $(DEPFLAGS) -pthread \
		-o $@ $< $(FUSE3_LIBS)

$(B)/tests/slowdisk/sdprobe: tests/slowdisk/sdprobe.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -o $@ $<

ALL_BINS += $(SLOWDISK_BINS)
TEST_SUITES += tests/slowdisk/selftest.sh
