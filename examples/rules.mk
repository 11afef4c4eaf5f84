# SPDX-License-Identifier: LGPL-2.1-or-later
# Example programs: workloads run bare and under the preload.  Built without
# $(SAN): a sanitizer runtime refuses to start behind LD_PRELOAD=libgc.so.
EXAMPLE_BINS := $(B)/examples/fsync_storm

$(B)/examples/%: examples/%.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -pthread -o $@ $< -lm

ALL_BINS += $(EXAMPLE_BINS)

# A preload that times fsync/fdatasync as the program sees them (the demo's
# fs_mark latencies).
$(B)/examples/synclat.so: examples/synclat.c
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -fPIC -fvisibility=hidden -shared \
		-o $@ $< -ldl

ALL_BINS += $(B)/examples/synclat.so
