# cairn - build, test, demo.  `make demo` and `make check` install what is
# missing (Debian packages) before they build.
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
PKGS := libzstd libxxhash sqlite3 libcrypto libcurl libxml-2.0 libkeyutils
OPT ?= -O2 -g
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS += -std=gnu11 $(OPT) -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Iinclude -Ilib $(PKG_CFLAGS) -fPIC -pthread \
	-D_FILE_OFFSET_BITS=64 -D_GNU_SOURCE
LDLIBS += $(PKG_LIBS) -pthread
B ?= build

LIB_SRC := $(sort $(wildcard lib/*.c lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
CLI_SRC := $(sort $(wildcard cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(B)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%)

.PHONY: all deps demo check check-long unit asan tsan install clean fuzz check-s3
.PHONY: check-zfs check-stress FORCE

all: $(B)/cairn $(B)/libcairn.so $(B)/cairn.pc

deps:
	@scripts/deps.sh

$(B)/%.o: %.c include/cairn.h $(wildcard lib/*.h lib/*/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(B)/libcairn.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Only the API of include/cairn.h is exported (lib/libcairn.map): the
# internal functions the command and the tests link from libcairn.a stay
# out of the shared library's symbol table.
$(B)/libcairn.so: $(LIB_OBJ) lib/libcairn.map
	$(CC) -shared -Wl,-soname,libcairn.so.1 -Wl,--version-script=lib/libcairn.map \
		-o $@ $(LIB_OBJ) $(LDLIBS)

# The command links its libraries statically: a short command (a listing)
# otherwise spends half its time in the dynamic loader.  STATIC=0 opts out.
STATIC ?= 1
ifeq ($(STATIC),1)
# libcurl and libxml2 (S3 only) are not linked: cli/lazy_libs.c opens them
# on first use, as their dependency chain is most of a short command's cost.
# libcrypto and libfuse3 are linked statically too (binding libcrypto's
# symbols at exec cost a listing ~2 ms of CPU).
CLI_LIBS := -Wl,-Bstatic -lsqlite3 -lzstd -lxxhash -lkeyutils -lcrypto -Wl,-Bdynamic -lz -ldl -lm -pthread
# A PIE by default: the command parses untrusted streams, so its own code
# keeps a random load address.  PIE=0 trades that for a faster start: a
# PIE's ~19,000 relative relocations (libcrypto and SQLite function tables)
# are applied at every exec, each written page a copy-on-write fault (~20 us
# each on this VM) (BENCHMARKS.md, "Listing process floor, second cut").
PIE ?= 1
ifneq ($(PIE),1)
CLI_LDFLAGS := -no-pie
endif
else
CLI_LIBS := $(LDLIBS)
CLI_OBJ := $(filter-out $(B)/cli/lazy_libs.o,$(CLI_OBJ))
endif
$(B)/cairn: $(CLI_OBJ) $(B)/libcairn.a
	$(CC) $(CLI_LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libcairn.a $(CLI_LIBS)

# cairn.pc names PREFIX: the stamp changes (and cairn.pc is written again)
# whenever PREFIX does, so `make all; make install PREFIX=/opt/x` installs
# a cairn.pc naming /opt/x, not the PREFIX of the earlier build.
$(B)/.prefix: FORCE
	@mkdir -p $(B)
	@echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' >$@
FORCE:

$(B)/cairn.pc: Makefile $(B)/.prefix
	@mkdir -p $(B)
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: cairn\nDescription: deduplicating backup datastore\nVersion: 0.1\nRequires.private: %s\nLibs: -L$${libdir} -lcairn\nCflags: -I$${includedir}\n' \
		'$(PREFIX)' '$(PKGS)' > $@

$(B)/tests/%: tests/unit/%.c tests/unit/unit.h $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(B)/libcairn.a $(LDLIBS)

# Fuzz targets build two ways: with a replay driver (plain cc, used by
# `make check` on the stored corpus) and, via `make fuzz`, with libFuzzer.
$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/replay.c $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< tests/fuzz/replay.c $(B)/libcairn.a $(LDLIBS)

unit: $(UNIT_BIN)

check: deps
	$(MAKE) all unit $(FUZZ_BIN)
	tests/run.sh

# The kill, race and cut loops and the listing parity sweep (tests marked
# "# tier: stress"): minutes, so
# apart from make check; CI runs both.
check-stress: deps
	$(MAKE) all
	CAIRN_TIER=stress tests/run.sh

# The real zfs clients (sanoid, syncoid) against cairn: minutes, so apart.
check-zfs: deps
	$(MAKE) all
	CAIRN=$(CURDIR)/$(B)/cairn CAIRN_SRC=$(CURDIR) bash tests/cli/zfs-sanoid-syncoid.sh

check-long: deps
	$(MAKE) all unit $(FUZZ_BIN)
	CAIRN_LONG=1 tests/run.sh

# ASan + UBSan; any report fails the test that produced it (tests/run.sh).
# The build directory is stamped with its flags, so a change of them
# rebuilds it instead of mixing objects.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
asan: deps
	@echo '$(SAN_FLAGS)' | cmp -s - build-asan/.flags || { rm -rf build-asan; mkdir -p build-asan; echo '$(SAN_FLAGS)' >build-asan/.flags; }
	$(MAKE) B=build-asan STATIC=0 OPT="-O1 -g $(SAN_FLAGS)" \
		LDLIBS="$(PKG_LIBS) -pthread $(SAN_FLAGS)" all unit $(FUZZ_SRC:tests/fuzz/%.c=build-asan/fuzz/%)
	CAIRN_BUILD=build-asan tests/run.sh

# ThreadSanitizer over the tests whose commands run threads in one process
# (the unit tests without threads, and test_gc's 30x slowdown, are left out):
# the backup pipeline and its flusher, restore lanes, recv's parallel verify,
# GC, the S3-less chunk cache paths and the FUSE mount.  Races between
# processes are the kill and race tests' job (check-stress); TSan sees only
# threads.  Address-space randomisation is turned off for the run (setarch
# -R) because TSan's fixed shadow layout fails on kernels with many
# mmap_rnd_bits.
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
TSAN_TESTS := unit/test_api unit/test_blob unit/test_chunkcache unit/test_chunkstore unit/test_lru \
	unit/test_pool_backup unit/test_recvq unit/test_snapio unit/test_statahead \
	unit/test_stream unit/test_threads cli/t0300-* cli/t0310-* cli/t0600-* \
	cli/t0601-* cli/t0640-* cli/t0800-* cli/t0820-* cli/t0840-* cli/t0880-* \
	cli/t1000-* cli/t1110-* cli/t1160-* cli/t1170-* cli/t1310-* cli/t1520-* \
	cli/t1593-* cli/t1720-*
tsan: deps
	@echo '$(TSAN_FLAGS)' | cmp -s - build-tsan/.flags || { rm -rf build-tsan; mkdir -p build-tsan; echo '$(TSAN_FLAGS)' >build-tsan/.flags; }
	$(MAKE) B=build-tsan STATIC=0 OPT="-O1 -g $(TSAN_FLAGS)" \
		LDLIBS="$(PKG_LIBS) -pthread $(TSAN_FLAGS)" all unit
	CAIRN_BUILD=build-tsan CAIRN_TESTS='$(TSAN_TESTS)' setarch $$(uname -m) -R tests/run.sh

# Coverage-guided fuzzing (clang, libFuzzer + ASan + UBSan), FUZZ_SECONDS
# per target (scripts/fuzz.sh).  The fuzzer binaries link without replay.c.
$(B)/libfuzzer/%: tests/fuzz/%.c $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/libcairn.a $(LDLIBS)

fuzz: deps
	scripts/fuzz.sh

demo: deps
	$(MAKE) all
	scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0755 $(B)/cairn $(DESTDIR)$(PREFIX)/bin/cairn
	install -m 0644 $(B)/libcairn.a $(DESTDIR)$(PREFIX)/lib/libcairn.a
	install -m 0755 $(B)/libcairn.so $(DESTDIR)$(PREFIX)/lib/libcairn.so.1
	ln -sf libcairn.so.1 $(DESTDIR)$(PREFIX)/lib/libcairn.so
	install -m 0644 include/cairn.h $(DESTDIR)$(PREFIX)/include/cairn.h
	install -m 0644 $(B)/cairn.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/cairn.pc
	install -d $(DESTDIR)$(PREFIX)/libexec/cairn/zfs-compat
	ln -sf ../../../bin/cairn $(DESTDIR)$(PREFIX)/libexec/cairn/zfs-compat/zfs
	ln -sf ../../../bin/cairn $(DESTDIR)$(PREFIX)/libexec/cairn/zfs-compat/zpool

clean:
	rm -rf build build-asan build-tsan build-fuzz

# S3 backend against a real single-node Ceph (scripts/ceph-dev.sh): the
# client test, tests/s3/t1[45]*.sh, then chunk-touching CLI tests on S3 stores.
$(B)/s3/%: tests/s3/%.c $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libcairn.a $(LDLIBS)

check-s3: deps
	$(MAKE) all $(B)/s3/test_s3 $(B)/s3/s3tool
	tests/s3/run.sh
# cairn mount: libfuse3 for the command only (libcairn does not depend on it).
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS := $(shell pkg-config --libs fuse3 2>/dev/null)
ifeq ($(STATIC)$(if $(FUSE_LIBS),y),1y)
FUSE_LIBS := -Wl,-Bstatic -lfuse3 -Wl,-Bdynamic -lpthread -ldl -lrt
endif
$(B)/cli/fusefs.o: CFLAGS += $(FUSE_CFLAGS)
$(B)/cairn: CLI_LIBS += $(FUSE_LIBS)

# Manual pages (scdoc sources in man/), and what `make install` adds to the
# command and library: pages, docs, bash completion, systemd units.
MAN_SRC := $(wildcard man/*.scd)
MAN_OUT := $(MAN_SRC:man/%.scd=$(B)/man/%)
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
BASH_COMPLETION_DIR ?= $(PREFIX)/share/bash-completion/completions
.PHONY: man install-extras
man: $(MAN_OUT)
$(B)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@
install: install-extras
install-extras: man
	install -d $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man7 \
		$(DESTDIR)$(PREFIX)/share/doc/cairn $(DESTDIR)$(BASH_COMPLETION_DIR) \
		$(DESTDIR)$(SYSTEMD_UNIT_DIR)
	install -m 0644 $(filter %.8,$(MAN_OUT)) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 $(filter %.7,$(MAN_OUT)) $(DESTDIR)$(PREFIX)/share/man/man7/
	printf '.so man8/cairn-recv.8\n' > $(DESTDIR)$(PREFIX)/share/man/man8/cairn-receive.8
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/cairn/
	install -m 0644 completion/cairn.bash $(DESTDIR)$(BASH_COMPLETION_DIR)/cairn
	for u in systemd/*.service systemd/*.timer; do \
		sed 's|@BINDIR@|$(PREFIX)/bin|g' $$u > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$(basename $$u) && \
		chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$(basename $$u) || exit 1; \
	done
# `cairn help VERB` finds the pages next to the binary: build them with it
# when scdoc is there (scripts/deps.sh installs it).
ifneq ($(shell command -v scdoc 2>/dev/null),)
all: man
endif

# Benchmark helpers (bench/*.c, linked with the library): `make bench`.
.PHONY: bench
bench: $(B)/bench/limit $(B)/bench/mkstore
$(B)/bench/%: bench/%.c $(B)/libcairn.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libcairn.a $(LDLIBS)
