# gpuwho — build, test, install.  `make`, `make check`, `make asan check`, `make install PREFIX=/usr/local`.
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -Isrc \
           -DGPUWHO_VERSION='"$(VERSION)"' $(shell pkg-config --cflags jansson 2>/dev/null) $(EXTRA_CFLAGS)
LDLIBS  += $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson) -ldl -lm -pthread
# libmicrohttpd: gpuwho serve's HTTP server
override CFLAGS += $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)

SRC     := $(shell find src -name '*.c' | sort)
LIBSRC  := $(filter-out src/main.c,$(SRC))
OBJ     := $(SRC:%.c=$(BUILD)/%.o)
LIBOBJ  := $(LIBSRC:%.c=$(BUILD)/%.o)
UNIT    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
HELPERS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(wildcard tests/helpers/*.c))
# Shared libraries built only for tests (the fake NVML): tests/lib/NAME.c -> build/tests/NAME.so
TESTLIBS:= $(patsubst tests/lib/%.c,$(BUILD)/tests/%.so,$(wildcard tests/lib/*.c))

all: $(BUILD)/gpuwho

$(BUILD)/gpuwho: $(OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libgpuwho.a: $(LIBOBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libgpuwho.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(BUILD)/libgpuwho.a $(LDLIBS) -lcmocka

$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)

# fusestall (a FUSE file whose reads never answer: processes stuck on their memory-map lock) needs
# libfuse3 (scripts/install-deps installs it); without it the helper is not built and the tests that
# need it skip, saying so.
ifneq ($(shell pkg-config --exists fuse3 && echo yes),yes)
HELPERS := $(filter-out $(BUILD)/tests/fusestall,$(HELPERS))
endif
$(BUILD)/tests/fusestall: tests/helpers/fusestall.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags fuse3) $(LDFLAGS) -o $@ $< $(shell pkg-config --libs fuse3)

$(BUILD)/tests/%.so: tests/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -fPIC -shared $(LDFLAGS) -o $@ $< $(LDLIBS)

tests: $(BUILD)/gpuwho $(UNIT) $(HELPERS) $(TESTLIBS)

# Runs every unit and end-to-end test, then the fuzz run (fuzz-run) where clang has libFuzzer; the
# suite's summary, "N passed, N failed, N skipped", is printed again as the last line.
check: tests
	@{ BUILD=$(BUILD) tests/run; echo $$? >$(BUILD)/.check-rc; } | tee $(BUILD)/.check-log
	@rc=$$(cat $(BUILD)/.check-rc); fz=0; \
	if [ "$(FUZZ_TIME)" = 0 ]; then echo "fuzz run skipped: FUZZ_TIME=0"; \
	elif [ "$(HAVE_LIBFUZZER)" != yes ]; then \
		echo "fuzz run skipped: no clang with libFuzzer (-fsanitize=fuzzer); scripts/install-deps installs it"; \
	else $(MAKE) --no-print-directory fuzz-run || fz=1; fi; \
	[ $$fz -eq 0 ] || echo "fuzz run FAILED: a target crashed (above; inputs in build-fuzz/artifacts/)"; \
	tail -n 1 $(BUILD)/.check-log; \
	[ $$rc -eq 0 ] && [ $$fz -eq 0 ]

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its own build folder.
asan:
	$(MAKE) BUILD=build-asan CFLAGS='-O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer' \
		LDFLAGS='-fsanitize=address,undefined' tests
check-asan: asan
	BUILD=build-asan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run

# libFuzzer targets (clang only), one per tests/fuzz/fuzz_NAME.c: the snapshot loader, the launch-line
# parser, the config.json reader, the renderers over loaded snapshots. `make fuzz && build-fuzz/fuzz_NAME tests/fuzz/corpus/NAME`.
FUZZ      := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# Seconds each target runs in fuzz-run (and so in check); 0 skips the fuzz run in check.
FUZZ_TIME ?= 60
# "yes" when clang links a libFuzzer target (Debian: clang and libclang-rt-dev); evaluated only when used.
HAVE_LIBFUZZER = $(shell mkdir -p build-fuzz && printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
	clang -x c -fsanitize=fuzzer -o build-fuzz/.probe - >/dev/null 2>&1 && echo yes; rm -f build-fuzz/.probe)

fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS='$(FUZZFLAGS)' build-fuzz/libgpuwho.a
	$(MAKE) $(FUZZ)

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c build-fuzz/libgpuwho.a
	clang -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Isrc $(shell pkg-config --cflags jansson 2>/dev/null) -O1 -g \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< build-fuzz/libgpuwho.a $(LDLIBS)

# Each fuzz target for FUZZ_TIME seconds from its seed corpus (tests/fuzz/corpus/NAME): tests/fuzz/run.
fuzz-run: fuzz
	tests/fuzz/run $(FUZZ_TIME) $(FUZZ)

# gpuwho's main job on this host: every GPU (ps) and the verdict (why); on a host without NVIDIA GPUs,
# also the bundled incident the project started from, replayed from its snapshot.
run:
	@$(MAKE) -s --no-print-directory $(BUILD)/gpuwho
	@$(BUILD)/gpuwho ps; echo; $(BUILD)/gpuwho why; \
	if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then \
		echo; echo "== No NVIDIA GPU here. The seed incident, replayed: $(BUILD)/gpuwho why --from examples/seed-container.json"; \
		echo; $(BUILD)/gpuwho why --from examples/seed-container.json; \
	fi; true

# Where `make install` puts things (DESTDIR is prepended to each, for packaging). The binary is
# stripped unless STRIP_FLAG is empty (debian/rules empties it: dh_strip keeps the debug symbols).
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/gpuwho
DATADIR ?= $(PREFIX)/share/gpuwho
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
STRIP_FLAG  ?= -s
MANPAGES := $(wildcard man/*.1)
DOCS     := README.md $(wildcard docs/*.md)
DEPLOY   := $(shell find deploy -type f 2>/dev/null | sort)

install: $(BUILD)/gpuwho
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(STRIP_FLAG) $(BUILD)/gpuwho $(DESTDIR)$(BINDIR)/gpuwho
	$(if $(MANPAGES),install -m 0644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man1/)
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	$(if $(wildcard completions/gpuwho.bash),install -m 0644 completions/gpuwho.bash $(DESTDIR)$(BASHCOMPDIR)/gpuwho)
	$(if $(wildcard completions/_gpuwho),install -m 0644 completions/_gpuwho $(DESTDIR)$(ZSHCOMPDIR)/_gpuwho)
	$(if $(wildcard completions/gpuwho.fish),install -m 0644 completions/gpuwho.fish $(DESTDIR)$(FISHCOMPDIR)/gpuwho.fish)
	for f in $(DEPLOY); do install -D -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f; done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuwho $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MANPAGES))) \
		$(DESTDIR)$(BASHCOMPDIR)/gpuwho $(DESTDIR)$(ZSHCOMPDIR)/_gpuwho $(DESTDIR)$(FISHCOMPDIR)/gpuwho.fish
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)

# A binary to copy onto nodes without packages: jansson linked in from libjansson.a, glibc dynamic
# because NVML is a shared library that only a dynamically linked glibc can dlopen (a fully static
# glibc binary cannot load libnvidia-ml.so.1 reliably, and musl cannot at all). It needs the glibc
# versions of the build host: built on Debian 12, GLIBC_2.34 (Debian 12+, Ubuntu 22.04+, RHEL 9+);
# for older nodes run `make static` on the oldest distribution you deploy to. Prints what it needs.
# gpuwho serve is left out (libmicrohttpd needs GnuTLS, which has no static form worth shipping):
# `gpuwho metrics -o` with node_exporter's textfile collector does its job on such nodes.
static:
	$(MAKE) BUILD=build-static EXTRA_CFLAGS=-DGPUWHO_NO_SERVE build-static/gpuwho-static
$(BUILD)/gpuwho-static: $(OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -static-libgcc -o $@ $^ -Wl,-Bstatic -ljansson -Wl,-Bdynamic -ldl -lm -pthread
	strip $@
	@echo "$@: dynamic libraries: $$(objdump -p $@ | awk '/NEEDED/ {printf "%s ", $$2}'); needs glibc >= \
	$$(objdump -T $@ | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | cut -d_ -f2)"

clean:
	rm -rf build build-asan build-fuzz build-static

.PHONY: all tests check asan check-asan fuzz fuzz-run install uninstall static run clean
-include $(OBJ:.o=.d) $(TESTLIBS:.so=.d)
