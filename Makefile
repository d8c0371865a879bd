# gpuwho — build, test, install.  `make`, `make check`, `make asan check`, `make install PREFIX=/usr/local`.
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -Isrc \
           -DGPUWHO_VERSION='"$(VERSION)"' $(shell pkg-config --cflags jansson 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson) -ldl -lm -pthread

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
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libgpuwho.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(BUILD)/libgpuwho.a $(LDLIBS) -lcmocka

$(BUILD)/tests/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)

$(BUILD)/tests/%.so: tests/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -fPIC -shared $(LDFLAGS) -o $@ $< $(LDLIBS)

tests: $(BUILD)/gpuwho $(UNIT) $(HELPERS) $(TESTLIBS)

# Runs every unit and end-to-end test; the last line is "N passed, N failed, N skipped".
check: tests
	BUILD=$(BUILD) tests/run

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its own build folder.
asan:
	$(MAKE) BUILD=build-asan CFLAGS='-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer' \
		LDFLAGS='-fsanitize=address,undefined' tests
check-asan: asan
	BUILD=build-asan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run

# libFuzzer target for the snapshot loader (clang only; not part of check): make fuzz && build-fuzz/fuzz_snapshot
fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS='-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer' \
		build-fuzz/libgpuwho.a
	clang -std=c11 -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags jansson 2>/dev/null) -O1 -g \
		-fsanitize=fuzzer,address,undefined -o build-fuzz/fuzz_snapshot tests/fuzz/fuzz_snapshot.c \
		build-fuzz/libgpuwho.a $(LDLIBS)

# gpuwho's main job on this host: every GPU (ps) and the verdict (why); on a host without NVIDIA GPUs,
# also the bundled incident the project started from, replayed from its snapshot.
run: $(BUILD)/gpuwho
	@$(BUILD)/gpuwho ps; echo; $(BUILD)/gpuwho why; \
	if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then \
		echo; echo "== No NVIDIA GPU here. The seed incident, replayed: $(BUILD)/gpuwho why --from examples/seed-container.json"; \
		echo; $(BUILD)/gpuwho why --from examples/seed-container.json; \
	fi; true

install: $(BUILD)/gpuwho
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/gpuwho $(DESTDIR)$(PREFIX)/bin/gpuwho

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all tests check asan check-asan fuzz install clean
-include $(OBJ:.o=.d) $(TESTLIBS:.so=.d)
