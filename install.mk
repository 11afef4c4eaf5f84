# SPDX-License-Identifier: LGPL-2.1-or-later
# make install, make uninstall and make deb: one layout for both, under
# PREFIX. libgc.so goes into a directory of its own, outside the loader's
# search path, so that no bare name can reach it and Boehm GC's libgc.so stays
# Boehm's: gcrun knows the directory, LD_PRELOAD names it by full path.
PREFIX    ?= /usr/local
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR    ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
PKGLIBDIR ?= $(LIBDIR)/libgc-commit
BINDIR    ?= $(PREFIX)/bin
SBINDIR   ?= $(PREFIX)/sbin
MANDIR    ?= $(PREFIX)/share/man
UNITDIR   ?= $(PREFIX)/lib/systemd/system
LDCONFIG  ?= ldconfig
# PKGLIBDIR seen from PREFIX: an installed gcrun finds ../$(PKGLIBDIR_REL)
# first, so a tree copied elsewhere (DESTDIR) still finds its own library.
PKGLIBDIR_REL = $(patsubst $(PREFIX)/%,%,$(PKGLIBDIR))

# What gcrun and the library were built with, each file rewritten only when
# it changes: `make install PREFIX=/usr` after `make` rebuilds gcrun alone.
stamp = @mkdir -p $(@D); v='$(1)'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(B)/build-vars: FORCE
	$(call stamp,$(VERSION) $(PKGLIBDIR) $(PKGLIBDIR_REL) $(SBINDIR))
$(B)/build-version: FORCE
	$(call stamp,$(VERSION))
$(B)/shim/init.o: $(B)/build-version

INSTALL_BINS := $(LIB) $(B)/gcrun $(B)/gcstat $(if $(filter 1,$(GCD_DEPS_OK)),$(GCD))
install-bins: $(INSTALL_BINS)

# ldconfig runs only when libgc.so lands in a directory the loader searches,
# which happens only when PKGLIBDIR is set to one (the default is not), and
# never into a DESTDIR.
define ldconfig_if_searched
	$(Q)if [ -z "$(DESTDIR)" ] && PATH=$$PATH:/sbin:/usr/sbin $(LDCONFIG) -v -N -X 2>/dev/null | \
		sed -n 's|^\(/[^:]*\):.*|\1|p' | grep -qxF '$(PKGLIBDIR)'; then \
		echo "  LDCONFIG $(PKGLIBDIR) is in the loader's path"; PATH=$$PATH:/sbin:/usr/sbin $(LDCONFIG); fi
endef

install: $(LIB) $(B)/gcrun $(B)/gcstat
	install -d $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 0644 $(LIB) $(DESTDIR)$(PKGLIBDIR)/libgc.so
	install -m 0755 $(B)/gcrun $(B)/gcstat $(DESTDIR)$(BINDIR)/
	install -m 0644 man/gcrun.1 man/gcstat.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/libgc.7 $(DESTDIR)$(MANDIR)/man7/
	$(ldconfig_if_searched)

# gcd, its unit and gcd(8), when gcd can be built
install-gcd: $(GCD)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(GCD) $(DESTDIR)$(SBINDIR)/gcd
	sed 's|@SBINDIR@|$(SBINDIR)|' bpf/gcd.service > $(DESTDIR)$(UNITDIR)/gcd.service
	sed 's|@SBINDIR@|$(SBINDIR)|' bpf/libgc-recover.service > $(DESTDIR)$(UNITDIR)/libgc-recover.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/gcd.service $(DESTDIR)$(UNITDIR)/libgc-recover.service
	install -m 0644 man/gcd.8 $(DESTDIR)$(MANDIR)/man8/
ifeq ($(GCD_DEPS_OK),1)
install: install-gcd
endif

# Removes what install put there, with the same variables. A libgc.so that
# an older make install left in $(PREFIX)/lib goes too, only if it is ours
# (it carries libgc's marker symbol; Boehm GC's does not).
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ] && \
		[ -e $(UNITDIR)/gcd.service ]; then systemctl disable --now gcd.service || true; fi
	rm -f $(DESTDIR)$(PKGLIBDIR)/libgc.so $(DESTDIR)$(BINDIR)/gcrun $(DESTDIR)$(BINDIR)/gcstat \
		$(DESTDIR)$(MANDIR)/man1/gcrun.1 $(DESTDIR)$(MANDIR)/man1/gcstat.1 \
		$(DESTDIR)$(MANDIR)/man7/libgc.7 $(DESTDIR)$(SBINDIR)/gcd \
		$(DESTDIR)$(UNITDIR)/gcd.service $(DESTDIR)$(UNITDIR)/libgc-recover.service \
		$(DESTDIR)$(MANDIR)/man8/gcd.8
	@if [ -L $(DESTDIR)$(PKGLIBDIR)/$(SONAME) ]; then rm -f $(DESTDIR)$(PKGLIBDIR)/$(SONAME); fi
	@if [ -e $(DESTDIR)$(PREFIX)/lib/libgc.so ] && \
		grep -qa libgc_group_commit $(DESTDIR)$(PREFIX)/lib/libgc.so; then \
		echo "rm -f $(DESTDIR)$(PREFIX)/lib/libgc.so (an older make install's)"; \
		rm -f $(DESTDIR)$(PREFIX)/lib/libgc.so; fi
	@rmdir $(DESTDIR)$(PKGLIBDIR) 2>/dev/null || true
	$(ldconfig_if_searched)

# Debian packages (debian/, debhelper) into $(B)/deb, then lintian.
deb:
	$(Q)bash scripts/deps.sh deb
	$(Q)bash scripts/deb.sh $(B)/deb

# Every source file's SPDX line (scripts/spdx.sh --add writes the missing)
spdx:
	$(Q)bash scripts/spdx.sh --check

FORCE:
.PHONY: install install-gcd install-bins uninstall deb spdx FORCE
