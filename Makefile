# SPDX-License-Identifier: GPL-2.0
#
# cowlinkfs: top-level targets.  The kernel tree, built kernel and guest
# rootfs live in $(COWLINKFS_CACHE) (default ~/.cache/cowlinkfs).
#
#   make test      build everything needed and run the whole suite in the guest
#                  (KERNEL=debug: on the debug kernel, ONLY=cow: t_cow.sh only)
#   make soak      the random testers for SOAK seconds per lower (default 600;
#                  SOAK_FS="ext4 xfs" picks lowers, KERNEL=debug the kernel)
#   make bench     cowlinkfs side by side with the bare lower fs, overlayfs,
#                  mergerfs and cowdancer (knobs: BENCH_* in tests/run-bench.sh)
#   make demo      boot the guest and show cowlinkfs at work
#   make shell     boot the guest to an interactive shell, everything mounted
#   make module    build fs/cowlinkfs/cowlinkfs.ko against the guest kernel
#   make check     checkpatch --strict and sparse on the module
#   make unit      host-side unit tests of tools/

SHELL := /bin/bash
export ONLY LOWERS KERNEL SOAK SOAK_FS BENCH_FS BENCH_ROUNDS BENCH_FILES \
	BENCH_SCALE BENCH_META BENCH_DATA BENCH_SIZES BENCH_DISK
CROSS_CC ?= aarch64-linux-gnu-gcc
CFLAGS_TOOLS := -O2 -Wall -Wextra -Werror -static -I$(CURDIR)/fs/cowlinkfs/uapi
DESTDIR ?= build/arm64

HELPERS := $(patsubst tests/helpers/%.c,%,$(wildcard tests/helpers/*.c))

.PHONY: test soak bench demo shell module check unit cross clean

test:
	bash tests/run.sh

soak:
	bash tests/run-soak.sh

bench:
	bash tests/run-bench.sh

demo:
	bash guest/pipeline.sh demo

shell:
	bash guest/pipeline.sh shell

module:
	bash -c '. guest/lib.sh && make -C $$(kernel_dir) ARCH=arm64 \
		CROSS_COMPILE=aarch64-linux-gnu- M=$(CURDIR)/fs/cowlinkfs \
		CONFIG_COWLINK_FS=m W=1 modules'

check:
	bash guest/check.sh

unit:
	$(MAKE) -C tools clean
	$(MAKE) -C tools unit
	$(MAKE) -C tools clean

# arm64 binaries for the guest: test helpers and the cowlink tool.
cross:
	mkdir -p $(DESTDIR)
	for h in $(HELPERS); do \
		$(CROSS_CC) $(CFLAGS_TOOLS) -o $(DESTDIR)/$$h tests/helpers/$$h.c || exit 1; \
	done
	$(MAKE) -C tools clean
	$(MAKE) -C tools CC=$(CROSS_CC) AR=aarch64-linux-gnu-ar LDFLAGS=-static \
		DESTDIR=$(abspath $(DESTDIR)) install
	$(MAKE) -C tools clean

clean:
	rm -rf build
	rm -f fs/cowlinkfs/*.o fs/cowlinkfs/*.ko fs/cowlinkfs/*.mod* \
		fs/cowlinkfs/.*.cmd fs/cowlinkfs/modules.order fs/cowlinkfs/Module.symvers
