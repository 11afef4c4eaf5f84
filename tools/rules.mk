# The tools: gcstat (live view of the stats segments and gcd's file) and
# gcrun (launcher). Plain C, built by plain `make`.
TOOLS_CORE := $(B)/core/procstats.o $(B)/core/stats.o

$(B)/gcstat: tools/gcstat.c $(TOOLS_CORE)
	$(call msg,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) $(WARN) $(DEPFLAGS) -o $@ $< $(TOOLS_CORE)

ALL_BINS += $(B)/gcstat
TEST_SUITES += tests/tools/gcstat.sh
