# SPDX-License-Identifier: LGPL-2.1-or-later
# The tools: gcstat (live view of the stats segments and gcd's file) and
# gcrun (launcher). Plain C, built by plain `make`.
TOOLS_CORE := $(B)/core/procstats.o $(B)/core/stats.o $(B)/core/busguard.o $(B)/core/sys.o

$(B)/gcstat: tools/gcstat.c $(TOOLS_CORE)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) $(LDFLAGS) -o $@ $< $(TOOLS_CORE) -lpthread

ALL_BINS += $(B)/gcstat
TEST_SUITES += tests/tools/gcstat.sh

# gcrun knows where make install (and the Debian package) put libgc.so:
# install.mk's directories, rebuilt when they change ($(B)/build-vars).
# The intent log's format and recovery, shared with the library and gcd.
INTENT_OBJS := $(B)/journal/intent_fmt.o $(B)/journal/intent_log.o
$(B)/gcrun: tools/gcrun.c tools/gcrun_intent.c $(INTENT_OBJS) $(B)/build-vars
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) $(LDFLAGS) -DGC_VERSION='"$(VERSION)"' \
		-DGC_PKGLIBDIR='"$(PKGLIBDIR)"' -DGC_PKGLIBDIR_REL='"$(PKGLIBDIR_REL)"' \
		-DGC_SBINDIR='"$(SBINDIR)"' -o $@ $< tools/gcrun_intent.c $(INTENT_OBJS)

ALL_BINS += $(B)/gcrun
TEST_SUITES += tests/tools/gcrun.sh
# every tool has a man page, every LIBGC_* the code reads is in libgc(7),
# and make install puts them where they belong
TEST_SUITES += tests/tools/man.sh
# the docs: every variable, every link, the results index, the front door
TEST_SUITES += tests/tools/docs.sh
