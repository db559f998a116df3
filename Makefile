# SPDX-License-Identifier: GPL-2.0
#
# cowlinkfs: top-level targets.  The kernel tree, built kernel and guest
# rootfs live in COWLINKFS_CACHE (default ~/.cache/cowlinkfs).
#
#   make           the tools (cowlink, libcowlink) and, where the running
#                  kernel's build tree or KDIR is one of Linux 6.1, the module
#   make help      this text (the knobs of each target: HACKING.md)
#   make test      build everything needed and run the whole suite in the guest
#                  (ARCH=x86_64: the x86_64 guest)
#                  (KERNEL=debug: on the debug kernel, ONLY=cow: t_cow.sh only,
#                  FULL=1: every test on all six lowers, not the tests of
#                  cowlinkfs's own rules on the core lowers only)
#   make soak      the random testers for SOAK seconds per lower (default 600;
#                  SOAK_FS="ext4 xfs" picks lowers, KERNEL=debug the kernel)
#   make fstests   fstests (FSTESTS=xfstests-dev checkout or tarball) on the
#                  bare lower and through cowlinkfs, compared (knobs:
#                  FSTESTS_* in tests/host/run-fstests.sh)
#   make bench     cowlinkfs side by side with the bare lower fs, overlayfs,
#                  mergerfs and cowdancer (knobs: BENCH_* in tests/host/run-bench.sh)
#   make profile   where a metadata operation spends its time: the function
#                  profiler during the tree workloads, bare and through us
#   make demo      boot the guest and show cowlinkfs at work
#   make shell     boot the guest to an interactive shell, everything mounted
#   make check     the lints: checkpatch --strict, sparse and W=1 on the
#                  module, shellcheck on the scripts, the tests' directives
#   make unit      host-side unit tests of tools/
#
# Building and installing (see README.md, "Install"):
#
#   make module [KDIR=...]           build fs/cowlinkfs/cowlinkfs.ko against a
#                                    6.1 kernel build tree (default: the
#                                    running kernel's; KDIR=guest: the guest
#                                    kernel of the cache)
#   make modules_install [KDIR=...]  install it under /lib/modules/KVER/updates
#                                    (INSTALL_MOD_PATH=... for a staging root)
#   make install [prefix=/usr/local] cowlink, libcowlink, headers, man pages,
#                                    completions (DESTDIR, prefix, bindir,
#                                    libdir, includedir, mandir as in the GNU
#                                    standards; PREFIX, BINDIR, ... also work)
#   make install-strip               the same, the program and library stripped
#   make uninstall                   remove what make install put there
#   make dkms-source                 the module's DKMS source tree, in
#                                    $(DESTDIR)/usr/src/cowlinkfs-VERSION
#   make deb [DEB_ARCH=...]          Debian packages into build/deb/, for
#                                    this machine's architecture unless
#                                    DEB_ARCH names another (cross-built)
#   make installcheck                prove the packages in a guest: dpkg -i,
#                                    DKMS build, modprobe, fstab mount, cowlink,
#                                    then an upgrade from and a downgrade to
#                                    the packages of DEB_UPGRADE_FROM (a tag,
#                                    or the commit guest/deb.sh names for it
#                                    where the clone has no tags; default
#                                    v0.1.0; empty: none)

SHELL := /bin/bash
# ARCH is not in the list: exported empty, it would break a kernel build
# (make module KDIR=...); make exports it by itself when it is set.
export ONLY LOWERS FULL TEST_TIMEOUT KERNEL SOAK SOAK_FS BENCH_FS BENCH_ROUNDS BENCH_FILES \
	BENCH_SCALE BENCH_META BENCH_DATA BENCH_SIZES BENCH_DISK BENCH_CONFIGS \
	BENCH_WORKLOADS BENCH_DROP FSTESTS FSTESTS_LOWERS FSTESTS_MODES FSTESTS_GROUP FSTESTS_ARGS \
	FSTESTS_DEV_SIZE FSTESTS_SECTION_LIMIT FSTESTS_SKIP FSTESTS_PARTS FSTESTS_JOBS
# The guest's compiler (guest/lib.sh sets CROSS_COMPILE empty for x86_64).
CROSS_COMPILE ?= aarch64-linux-gnu-
CROSS_CC := $(CROSS_COMPILE)gcc
CFLAGS_TOOLS := -O2 -Wall -Wextra -Werror -static -I$(CURDIR)/fs/cowlinkfs/uapi
# Where "make cross" puts the guest's binaries.
CROSS_OUT ?= build/guest
VERSION := $(shell cat VERSION)
DKMS_SRC := /usr/src/cowlinkfs-$(VERSION)
# The module's source files, as DKMS and the Debian package ship them.
MODULE_FILES := $(filter-out %.mod.c,$(wildcard fs/cowlinkfs/*.[ch])) \
	fs/cowlinkfs/Makefile fs/cowlinkfs/Kconfig fs/cowlinkfs/uapi/linux/cowlinkfs.h

HELPERS := $(patsubst tests/helpers/%.c,%,$(wildcard tests/helpers/*.c))

.PHONY: all help tools test fstests soak bench profile demo shell module modules_install \
	module-skipped install install-strip uninstall dkms-source deb installcheck check \
	unit cross clean

# The running kernel's build tree, unless KDIR names another (or "guest").
KDIR ?= /lib/modules/$(shell uname -r)/build

# The module is for Linux 6.1 only (as dkms.conf says): a bare make builds
# it against a 6.1 build tree and says why it did not otherwise, instead of
# failing on another kernel's headers.
KRELEASE := $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)

all: tools $(if $(filter guest,$(KDIR))$(filter 6.1.%,$(KRELEASE)),module,module-skipped)

module-skipped:
	@echo "make: module not built: $(if $(KRELEASE),$(KDIR) is Linux $(KRELEASE),no kernel build tree in $(KDIR)); cowlinkfs is for Linux 6.1 (make module KDIR=...)"

help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

tools:
	$(MAKE) -C tools

test:
	bash tests/host/run.sh

soak:
	bash tests/host/run-soak.sh

fstests:
	bash tests/host/run-fstests.sh

bench:
	bash tests/host/run-bench.sh

profile:
	bash tests/host/run-bench.sh profile

# The demo shows the host's progress lines and the guest's from its first
# one to its power-off: not the kernel's boot messages (lockdep's banner,
# PCI), its taint notice for an out-of-tree module, its power-off lines
# or what the guest's init prints after them.  If the guest never starts
# the demo, the last lines of the console (QEMU's error, a panic) are
# shown.  The whole console is in $(COWLINKFS_CACHE)/logs/guest-demo.log.
demo:
	set -o pipefail; bash guest/pipeline.sh demo | awk ' \
		/^# cowlinkfs guest:/ { guest = seen = 1 } \
		/^sysrq: Power Off\r?$$/ { guest = 0 } \
		/^cowlinkfs: loading out-of-tree module taints kernel/ { next } \
		guest || /^\[ *[0-9]+s\] / { print; fflush(); next } \
		!seen { early[n++ % 20] = $$0 } \
		END { if (seen) exit; \
			print "demo: the guest did not start the demo; the last lines of its console:"; \
			for (i = n > 20 ? n - 20 : 0; i < n; i++) print early[i % 20] }'

shell:
	bash guest/pipeline.sh shell

# KDIR=guest: the guest kernel of the cache (ARCH=x86_64: the x86_64 one).
ifeq ($(KDIR),guest)
module modules_install:
	bash -c '. guest/lib.sh && module_make W=1 $(subst module,modules,$@)'
else
module modules_install:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/fs/cowlinkfs CONFIG_COWLINK_FS=m W=1 \
		INSTALL_MOD_DIR=updates $(subst module,modules,$@)
endif

install install-strip uninstall:
	$(MAKE) -C tools $@

dkms-source:
	install -d $(DESTDIR)$(DKMS_SRC)/uapi/linux
	for f in $(MODULE_FILES); do \
		install -m 644 $$f $(DESTDIR)$(DKMS_SRC)/$${f#fs/cowlinkfs/} || exit 1; \
	done
	install -m 644 VERSION $(DESTDIR)$(DKMS_SRC)/VERSION
	sed 's/#MODULE_VERSION#/$(VERSION)/' dkms.conf >$(DESTDIR)$(DKMS_SRC)/dkms.conf

deb:
	bash guest/deb.sh $(DEB_ARCH)

installcheck: export DEB_UPGRADE_FROM ?= v0.1.0
installcheck:
	bash guest/pipeline.sh install
	bash tests/host/report.sh install

check:
	bash guest/check.sh

unit:
	$(MAKE) -C tools clean
	$(MAKE) -C tools WERROR=1 unit
	$(MAKE) -C tools clean

# Static binaries for the guest: test helpers and the cowlink tool, each
# rebuilt when its sources change.
CROSS_DEPS := fs/cowlinkfs/uapi/linux/cowlinkfs.h Makefile
cross: $(addprefix $(CROSS_OUT)/,$(HELPERS) cowlink)

$(CROSS_OUT)/%: tests/helpers/%.c $(CROSS_DEPS)
	@mkdir -p $(CROSS_OUT)
	$(CROSS_CC) $(CFLAGS_TOOLS) -o $@ $<

$(CROSS_OUT)/cowlink: $(wildcard tools/*.[ch]) tools/Makefile $(CROSS_DEPS)
	@mkdir -p $(CROSS_OUT)
	$(MAKE) -C tools clean
	$(MAKE) -C tools CC=$(CROSS_CC) AR=$(CROSS_COMPILE)ar LDFLAGS=-static WERROR=1 cowlink
	cp tools/cowlink $@
	$(MAKE) -C tools clean

clean:
	rm -rf build
	rm -f fs/cowlinkfs/*.o fs/cowlinkfs/*.ko fs/cowlinkfs/*.mod* \
		fs/cowlinkfs/.*.cmd fs/cowlinkfs/modules.order fs/cowlinkfs/Module.symvers
