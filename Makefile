# qsptop: `top` for lock contention.
#   make          build build/qsptop and build/libqsptop.so
#   make check    build and run every test
#   make check-fresh  make check of the committed tree on a fresh minimal
#                 Debian 12 (a debootstrap chroot; root; tests/fresh)
#   make bench    measure the collector's overhead (several minutes)
#   make fuzz     run the libFuzzer targets for FUZZ_SECONDS each
#   make demo     run qsptop on the bundled contention demo
#   make install  install under $(DESTDIR)$(PREFIX) (make uninstall removes it)

PREFIX  ?= /usr/local
BUILD   := build
CC      ?= cc
# Build in parallel, one job per core, unless -j was given.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

# Dependencies, as Debian packages found missing (-dev libraries through
# pkg-config). Building needs a C compiler with libc6-dev and libstdc++
# (the front end demangles with it), pkg-config, the -dev libraries, and
# libdebuginfod1, which qsptop loads at run time to fetch debuginfo (libdw
# does not pull it in). The tests also need tmux (the screen tests), g++
# (C++ workloads), libunwind (test_frames), musl-gcc from musl-tools (a
# musl program for test_promises), glib's runtime libglib2.0-0 (test_glib)
# and clang with its libFuzzer runtime (the fuzz targets). The pprof
# profiles need protobuf-c (its compiler generates the C of
# tui/profile.proto) and zlib, the HTTP endpoint libmicrohttpd, --diff
# cJSON to read snapshots (qsptop writes JSON without it; the tests read
# it back with it). The tests read what qsptop serves with go tool pprof
# (golang-go) and a Prometheus server (prometheus).
BUILD_PKGS := ncursesw libdw libelf libprotobuf-c zlib libmicrohttpd libcjson
TEST_PKGS  := libunwind
DEB_ncursesw := libncurses-dev
DEB_libunwind := libunwind-dev
DEB_libcjson := libcjson-dev
DEB_libdw := libdw-dev
DEB_libelf := libelf-dev
DEB_libprotobuf-c := libprotobuf-c-dev
DEB_zlib := zlib1g-dev
DEB_libmicrohttpd := libmicrohttpd-dev

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wformat=2
ifeq ($(CI),true)
WARN    += -Werror
endif
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC $(WARN) $(CFLAGS) \
	     -DQSPTOP_PREFIX='"$(PREFIX)"' \
	     -DQSPTOP_SOURCE_THEMES='"$(CURDIR)/themes"'
# Expanded when a recipe runs, after the dependency step has run. The
# collector needs none of them: it unwinds with its own code (frames.c);
# only test_frames compares it with libunwind.
PKG_CFLAGS = $(shell pkg-config --cflags libdw ncursesw libprotobuf-c \
	     libmicrohttpd libcjson) -I$(GEN)
PKG_LIBS   = $(shell pkg-config --libs libdw libelf ncursesw libprotobuf-c \
	     zlib libmicrohttpd libcjson) -lpthread
# The front end demangles C++ names with libstdc++'s __cxa_demangle.
CXX_ABI_LIBS := -lstdc++
# Unit tests take the front end from an archive without the screen (term.o,
# live.o): they need no curses. The unit and integration tests read JSON
# back with cJSON, a test tool.
TEST_CFLAGS = $(shell pkg-config --cflags libcjson)
UNIT_LIBS  = $(shell pkg-config --libs libcjson libdw libelf libprotobuf-c zlib \
	     libmicrohttpd) -lpthread -lm $(CXX_ABI_LIBS)

# C generated from tui/profile.proto (pprof's format) by protoc-c.
GEN           := $(BUILD)/gen
GEN_SRC       := $(GEN)/profile.pb-c.c
COMMON_SRC    := $(wildcard common/*.c)
COLLECTOR_SRC := $(wildcard collector/*.c)
TUI_SRC       := $(wildcard tui/*.c)
TUI_LIB_SRC   := $(filter-out tui/main.c,$(TUI_SRC))
UNIT_SRC      := $(wildcard tests/unit/test_*.c)
# Workload programs: all of tests/workloads but a plugin (a library).
WORKLOAD_SRC  := $(filter-out tests/workloads/invariant_plugin.c,\
		 $(wildcard tests/workloads/*.c tests/workloads/*.cc))
INTEG_SRC     := $(wildcard tests/integration/*.c)
# Bench programs: every tests/bench/NAME.c but the shared bench.c.
BENCH_SRC     := $(filter-out tests/bench/bench.c,$(wildcard tests/bench/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ    := $(call obj,$(COMMON_SRC))
COLLECTOR_OBJ := $(call obj,$(COLLECTOR_SRC))
TUI_LIB_OBJ   := $(call obj,$(TUI_LIB_SRC)) $(BUILD)/obj/gen/profile.pb-c.o
UNIT_BIN      := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
WORKLOAD_BIN  := $(patsubst tests/workloads/%,$(BUILD)/tests/wl_%,$(basename $(WORKLOAD_SRC)))
INTEG_BIN     := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(INTEG_SRC))
BENCH_BIN     := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
DEPS_STAMP    := $(BUILD)/.deps-build
TEST_DEPS_STAMP := $(BUILD)/.deps-test
# The unit tests again, under AddressSanitizer and UBSan.
SANITIZE      := -fsanitize=address,undefined -fno-sanitize-recover=all \
		 -fno-omit-frame-pointer
# Unit tests of the collector link its own modules, not the front end's.
COLLECTOR_UNIT := tests/unit/test_unwind.c tests/unit/test_table.c \
		 tests/unit/test_rows.c tests/unit/test_session.c \
		 tests/unit/test_order_merge.c
COLLECTOR_UNIT_SRC := collector/table.c collector/arena.c collector/rows.c \
		 collector/order.c \
		 collector/stacks.c collector/unwind.c collector/frames.c \
		 collector/ehframe.c common/cfi.c collector/modules.c \
		 collector/session.c collector/ownfd.c common/proto.c \
		 collector/heldby.c
ASAN_BIN      := $(patsubst tests/unit/%.c,$(BUILD)/asan/%,$(UNIT_SRC))
# The front end and common/ as archives for the unit tests, built once
# plainly and once under the sanitizers; the screen stays out.
UNIT_TUI_SRC  := $(filter-out tui/term.c tui/live.c,$(TUI_LIB_SRC)) $(COMMON_SRC)
UNIT_ARCHIVE  := $(BUILD)/obj/libunit.a
ASAN_ARCHIVE  := $(BUILD)/asan/obj/libunit.a
# The library's own copy of common/, with hidden symbols like the rest of it.
LIB_COMMON_OBJ := $(patsubst %.c,$(BUILD)/obj/lib/%.o,$(COMMON_SRC))

# libFuzzer targets, built with clang. `make fuzz` runs each for
# FUZZ_SECONDS (default 60); `make check` runs them for 15 s each, side by
# side (tests/run), unless FUZZ_SECONDS is given.
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_CHECK_SECONDS ?= 15
ifeq ($(filter command line environment,$(origin FUZZ_SECONDS)),)
FUZZ_CHECK_TIME := $(FUZZ_CHECK_SECONDS)
else
FUZZ_CHECK_TIME := $(FUZZ_SECONDS)
endif
FUZZ_CFLAGS   := -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 -fno-omit-frame-pointer \
		 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS  := proto theme
FUZZ_BIN      := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS)) \
		 $(BUILD)/fuzz/proto_seeds
FUZZ_TESTS    := $(patsubst %,$(BUILD)/tests/test_fuzz_%,$(FUZZ_TARGETS))
# A program that links libFuzzer, to see that clang has its runtime.
FUZZ_PROBE    := int LLVMFuzzerTestOneInput(const char *d, unsigned long n) \
		 { (void)d; (void)n; return 0; }

.PHONY: all check check-fresh bench demo install uninstall clean deps deps-test fuzz
all: $(BUILD)/qsptop $(BUILD)/libqsptop.so

# The dependency steps: `make` checks for the build dependencies, `make
# check` for the test tools too. Each installs what is missing when root;
# otherwise it says exactly what to run. Checked again when this file
# changes: it may need more.
deps: $(DEPS_STAMP)
deps-test: $(TEST_DEPS_STAMP)
$(DEPS_STAMP): Makefile
	@mkdir -p $(BUILD); missing=""; $(build_missing); \
	$(call install_missing,build dependencies)
	@touch $@
$(TEST_DEPS_STAMP): Makefile | $(DEPS_STAMP)
	@missing=""; $(test_missing); \
	$(call install_missing,test tools)
	@touch $@

# Shell: add to $$missing the build packages not found. Without a compiler,
# g++ brings libstdc++'s -dev package of Debian's default gcc.
define build_missing
if ! command -v $(CC) >/dev/null 2>&1; then \
  missing=" gcc libc6-dev g++"; \
elif ! printf '#include <stdio.h>\nint main(void) { return 0; }\n' | \
    $(CC) -x c - -o $(BUILD)/.probe >/dev/null 2>&1; then \
  missing=" libc6-dev"; \
elif ! printf 'int main(void) { return 0; }\n' | \
    $(CC) -x c - -o $(BUILD)/.probe -lstdc++ >/dev/null 2>&1; then \
  missing=" libstdc++-$$($(CC) -dumpversion | cut -d. -f1)-dev"; \
fi; \
rm -f $(BUILD)/.probe; \
command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
command -v protoc-c >/dev/null 2>&1 || missing="$$missing protobuf-c-compiler"; \
$(call pkgs_missing,$(BUILD_PKGS)); \
PATH=$$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null | \
  grep -q 'libdebuginfod\.so\.1 ' || missing="$$missing libdebuginfod1"
endef

# Shell: add to $$missing the test tools not found.
define test_missing
command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
command -v c++ >/dev/null 2>&1 || missing="$$missing g++"; \
command -v musl-gcc >/dev/null 2>&1 || missing="$$missing musl-tools"; \
PATH=$$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null | \
  grep -q 'libglib-2\.0\.so\.0 ' || missing="$$missing libglib2.0-0"; \
command -v go >/dev/null 2>&1 || missing="$$missing golang-go"; \
command -v prometheus >/dev/null 2>&1 || missing="$$missing prometheus"; \
if ! command -v $(FUZZ_CC) >/dev/null 2>&1; then \
  missing="$$missing clang libclang-rt-dev"; \
elif ! echo '$(FUZZ_PROBE)' | $(FUZZ_CC) -fsanitize=fuzzer -x c - \
    -o $(BUILD)/.fuzz-probe >/dev/null 2>&1; then \
  missing="$$missing libclang-rt-$$($(FUZZ_CC) -dumpversion | cut -d. -f1)-dev"; \
fi; \
rm -f $(BUILD)/.fuzz-probe; \
$(call pkgs_missing,$(TEST_PKGS))
endef

# Shell: add to $$missing the Debian package of each pkg-config name in $(1)
# that pkg-config does not know.
pkgs_missing = $(foreach p,$(1),pkg-config --exists $(p) 2>/dev/null || \
  missing="$$missing $(DEB_$(p))";) :

# Shell: install $$missing ($(1)) as root, or print the line to run and fail.
# apt's own output goes to a log, shown when it fails.
APT_INSTALL := apt-get install -y --no-install-recommends
define install_missing
if [ -z "$$missing" ]; then :; \
elif [ "$$(id -u)" = 0 ]; then \
  echo "installing $(1):$$missing"; began=$$(date +%s); \
  log=$(BUILD)/apt-$(word 1,$(1)).log; \
  export DEBIAN_FRONTEND=noninteractive; \
  { $(APT_INSTALL) $$missing || \
    { apt-get update && $(APT_INSTALL) $$missing; }; } >$$log 2>&1 || \
    { tail -n 20 $$log; echo "apt-get failed (log: $$log)"; exit 1; }; \
  echo "installed $(1) in $$(($$(date +%s) - began)) s"; \
elif command -v sudo >/dev/null 2>&1; then \
  echo "missing $(1); run: sudo $(APT_INSTALL)$$missing" >&2; exit 1; \
else \
  echo "missing $(1); run as root: $(APT_INSTALL)$$missing" >&2; exit 1; \
fi
endef

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP) $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

$(GEN_SRC): tui/profile.proto | $(DEPS_STAMP)
	@mkdir -p $(GEN)
	protoc-c --proto_path=tui --c_out=$(GEN) $<
$(BUILD)/obj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PKG_CFLAGS) -c $< -o $@
$(BUILD)/asan/obj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SANITIZE) $(PKG_CFLAGS) -c $< -o $@

# The collector lives in someone else's process: hidden symbols except the
# hooks, initial-exec TLS (it may be dlopen'ed), no dependency on our TUI
# or its libraries.
$(BUILD)/obj/collector/%.o: ALL_CFLAGS += -fvisibility=hidden -ftls-model=initial-exec
$(BUILD)/obj/collector/%.o: PKG_CFLAGS :=
$(BUILD)/obj/lib/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -DQSPTOP_COLLECTOR -MMD -MP -c $< -o $@
$(BUILD)/libqsptop.so: $(COLLECTOR_OBJ) $(LIB_COMMON_OBJ)
	$(CC) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -ldl -lpthread

$(BUILD)/qsptop: $(BUILD)/obj/tui/main.o $(TUI_LIB_OBJ) $(COMMON_OBJ)
	$(CC) -o $@ $^ $(PKG_LIBS) -lm $(CXX_ABI_LIBS)

$(UNIT_ARCHIVE): $(call obj,$(UNIT_TUI_SRC)) $(BUILD)/obj/gen/profile.pb-c.o
	rm -f $@ && ar rcs $@ $^
$(BUILD)/asan/obj/%.o: %.c | $(DEPS_STAMP) $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SANITIZE) $(PKG_CFLAGS) -MMD -MP -c $< -o $@
$(ASAN_ARCHIVE): $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(UNIT_TUI_SRC)) \
		 $(BUILD)/asan/obj/gen/profile.pb-c.o
	rm -f $@ && ar rcs $@ $^

# Unit tests link the front-end and common modules they use; a change to
# a header the tests share (check.h, model_fixture.h) rebuilds them.
UNIT_HDR := $(wildcard tests/unit/*.h)
$(BUILD)/tests/%: tests/unit/%.c $(UNIT_ARCHIVE) $(UNIT_HDR) | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -o $@ $(filter %.c %.a,$^) $(UNIT_LIBS)

# Workloads: -g so call sites resolve to file:line, -O1 keeps them readable.
$(BUILD)/tests/wl_%: tests/workloads/%.c tests/workloads/scene.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -Wall -o $@ $< -lpthread

# The invariance workload dlopens a plugin that sleeps in its constructor;
# the suite runs the workload.
INVARIANT_PLUGIN := $(BUILD)/tests/libwl_invariant_plugin.so
$(INVARIANT_PLUGIN): tests/workloads/invariant_plugin.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -shared -fPIC -o $@ $<
$(BUILD)/tests/test_invariance: $(BUILD)/tests/wl_invariant $(INVARIANT_PLUGIN)

# The wrapper workload calls one wrapper in a library of its own. Its
# stripped twins (PIE, and not) are for the address forms of --wrapper.
WRAP_CC = $(CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -Wall
WRAP_BIN := $(addprefix $(BUILD)/tests/,libwl_wrap.so wl_wrap wl_wrap_nopie \
	wl_wrap_stripped wl_wrap_nopie_stripped)
$(BUILD)/tests/libwl_wrap.so: tests/workloads/wrap.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(WRAP_CC) -DWRAP_LIB -shared -fPIC -o $@ $< -lpthread
$(BUILD)/tests/wl_wrap: tests/workloads/wrap.c $(BUILD)/tests/libwl_wrap.so
	$(WRAP_CC) -o $@ $< -L$(BUILD)/tests -lwl_wrap -Wl,-rpath,'$$ORIGIN' -lpthread
$(BUILD)/tests/wl_wrap_nopie: tests/workloads/wrap.c $(BUILD)/tests/libwl_wrap.so
	$(WRAP_CC) -no-pie -o $@ $< -L$(BUILD)/tests -lwl_wrap -Wl,-rpath,'$$ORIGIN' -lpthread
$(BUILD)/tests/%_stripped: $(BUILD)/tests/%
	strip --strip-all -o $@ $<

# The naming workload exports its functions (-rdynamic) as servers with
# plugins do (varnishd): its stripped twin still names them in .dynsym.
NAMES_BIN := $(BUILD)/tests/wl_names $(BUILD)/tests/wl_names_stripped
$(BUILD)/tests/wl_names: tests/workloads/names.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -Wall -rdynamic -o $@ $< -lpthread
$(BUILD)/tests/test_names $(BUILD)/tests/test_screens: $(NAMES_BIN)

# The wrappers to find without names: static in a stripped program whose
# callers are exported (-rdynamic), so that rows still name the callers.
AUTOWRAP_BIN := $(BUILD)/tests/wl_autowrap $(BUILD)/tests/wl_autowrap_stripped
$(BUILD)/tests/wl_autowrap: tests/workloads/autowrap.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -Wall -rdynamic -o $@ $< -lpthread
$(BUILD)/tests/test_autowrap: $(AUTOWRAP_BIN) $(WRAP_BIN)

# glib's locks through the real library, libglib2.0-0, which the test
# dependency step installs (its runtime package alone: the workload
# declares what it calls); without it, a stub that tells test_glib to
# skip. Looked for when the recipe runs, after that step.
GLIB_SO = $(shell ls /usr/lib/x86_64-linux-gnu/libglib-2.0.so.0 \
	/lib/x86_64-linux-gnu/libglib-2.0.so.0 2>/dev/null | head -n 1)
$(BUILD)/tests/wl_glib: tests/workloads/glib.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-inline -Wall -rdynamic \
		$(if $(GLIB_SO),-DHAVE_GLIB) -o $@ $< \
		$(if $(GLIB_SO),-l:libglib-2.0.so.0) -lpthread
$(BUILD)/tests/test_glib: $(BUILD)/tests/wl_glib

# A library whose unwind tables are larger than a small --max-memory: the
# prologue and epilogue of 150,000 empty functions, generated (4.7 MiB of
# .eh_frame). test_memory loads it into wl_memory.
BIGEH_FUNCTIONS := 150000
$(BUILD)/tests/libwl_bigeh.so: Makefile | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	awk -v n=$(BIGEH_FUNCTIONS) 'BEGIN { \
	  print "\t.section .note.GNU-stack,\"\",@progbits\n\t.text"; \
	  for (i = 0; i < n; i++) \
	    printf "f%d:\n\t.cfi_startproc\n\tpushq %%rbp\n" \
	      "\t.cfi_def_cfa_offset 16\n\t.cfi_offset 6, -16\n" \
	      "\tmovq %%rsp, %%rbp\n\t.cfi_def_cfa_register 6\n" \
	      "\tpopq %%rbp\n\t.cfi_def_cfa 7, 8\n\tret\n" \
	      "\t.cfi_endproc\n", i }' >$(BUILD)/tests/bigeh.S
	$(CC) -shared -s -o $@ $(BUILD)/tests/bigeh.S
	rm -f $(BUILD)/tests/bigeh.S
$(BUILD)/tests/test_memory: $(BUILD)/tests/libwl_bigeh.so

$(BUILD)/tests/wl_%: tests/workloads/%.cc | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -g -O1 -Wall -o $@ $< -lpthread

# The inlining workloads are optimised as programs usually are, so that
# their static inline helpers really are inlined.
$(BUILD)/tests/wl_inline: tests/workloads/inline.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -g -O2 -Wall -o $@ $< -lpthread
$(BUILD)/tests/wl_inline_cxx: tests/workloads/inline_cxx.cc | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -g -O2 -Wall -o $@ $< -lpthread

# Integration tests link common/ and the objects a rule below adds.
$(BUILD)/tests/%: tests/integration/%.c $(wildcard tests/integration/*.h) $(COMMON_OBJ) | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(filter %.o,$^) $(UNIT_LIBS)

$(BUILD)/asan/%: tests/unit/%.c $(ASAN_ARCHIVE) $(UNIT_HDR) | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SANITIZE) $(PKG_CFLAGS) $(TEST_CFLAGS) -o $@ $(filter %.c %.a,$^) $(UNIT_LIBS)

COLLECTOR_UNIT_LIBS = -ldl -lpthread
$(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(COLLECTOR_UNIT)): $(BUILD)/tests/%: tests/unit/%.c $(COLLECTOR_UNIT_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(COLLECTOR_UNIT_LIBS)
$(patsubst tests/unit/%.c,$(BUILD)/asan/%,$(COLLECTOR_UNIT)): $(BUILD)/asan/%: tests/unit/%.c $(COLLECTOR_UNIT_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SANITIZE) -o $@ $^ $(COLLECTOR_UNIT_LIBS)

# The unwinder's tests link the collector sources they need, built with the
# collector's flags; like the other unit tests, again under the sanitizers.
UNWINDER_FLAGS = $(ALL_CFLAGS) -fvisibility=hidden -ftls-model=initial-exec
$(BUILD)/tests/test_cfi $(BUILD)/asan/test_cfi: $(BUILD)/%/test_cfi: \
	tests/unit/test_cfi.c common/cfi.c common/cfi.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNWINDER_FLAGS) $(if $(filter asan,$*),$(SANITIZE)) -o $@ \
		$(filter %.c,$^) -ldl

# test_frames compares captures with libunwind's unw_backtrace(), and
# dlopens a C++ module.
FRAMES_SRC := collector/frames.c collector/ehframe.c collector/arena.c common/cfi.c
FRAMES_HDR := collector/frames.h collector/ehframe.h common/cfi.h collector/pages.h \
	      collector/arena.h
FRAMES_MOD := $(BUILD)/tests/libframes_mod.so
$(FRAMES_MOD): tests/unit/frames_mod.cc | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -g -fPIC -shared -o $@ $<
$(BUILD)/tests/test_frames $(BUILD)/asan/test_frames: $(BUILD)/%/test_frames: \
	tests/unit/test_frames.c $(FRAMES_SRC) $(FRAMES_HDR) $(FRAMES_MOD) | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(UNWINDER_FLAGS) $(shell pkg-config --cflags libunwind) \
		$(if $(filter asan,$*),$(SANITIZE)) \
		-DFRAMES_MOD='"$(abspath $(FRAMES_MOD))"' -o $@ \
		$(filter %.c,$^) $(shell pkg-config --libs libunwind) -lpthread -ldl

# The injection tests link the injection modules they test.
$(BUILD)/tests/test_inject $(BUILD)/tests/test_inject_borrow: \
	$(call obj,$(wildcard tui/inject*.c) tui/ns.c tui/maps.c) \
	$(wildcard tui/inject*.h)

# The hooks' own test links them (they take its lock calls) with a stack
# capture of its own making.
HOOKS_TEST_SRC := tests/unit/test_hooks.c collector/hooks.c collector/table.c \
		 collector/arena.c collector/rows.c collector/stacks.c \
		 collector/unwind.c collector/state.c collector/order.c
$(BUILD)/tests/test_hooks: $(HOOKS_TEST_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -rdynamic -ldl -lpthread
$(BUILD)/asan/test_hooks: $(HOOKS_TEST_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SANITIZE) -o $@ $^ -rdynamic -ldl -lpthread

# The collector's stress test links the collector itself (it is its own
# target), plainly and under ThreadSanitizer.
STRESS_SRC := tests/integration/test_stress.c $(COLLECTOR_SRC) $(COMMON_SRC)
STRESS_LIBS = -rdynamic -ldl -lpthread
$(BUILD)/tests/test_stress: $(STRESS_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(STRESS_LIBS)
$(BUILD)/tsan/test_stress: $(STRESS_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=thread -Wno-tsan -O1 -o $@ $^ $(STRESS_LIBS)

# The lock-free stack under ThreadSanitizer, used as the thread tables use it.
$(BUILD)/tsan/test_lfstack: tests/unit/test_lfstack.c collector/lfstack.h \
	collector/table.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=thread -O1 -o $@ $< -lpthread

# The lock-order merge while a thread notes, under ThreadSanitizer.
$(BUILD)/tsan/test_order_merge: tests/unit/test_order_merge.c \
	$(COLLECTOR_UNIT_SRC) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=thread -Wno-tsan -O1 -o $@ $^ \
		$(COLLECTOR_UNIT_LIBS)

# The HTTP endpoint's threads under ThreadSanitizer.
$(BUILD)/tsan/test_serve: tests/unit/test_serve.c tui/serve.c tui/serve.h \
	tui/xalloc.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=thread -O1 -o $@ $(filter %.c,$^) \
		$(shell pkg-config --libs libmicrohttpd) -lpthread

# The fuzz targets: the decoder with common/, the theme parser alone.
$(BUILD)/fuzz/fuzz_proto: tests/fuzz/fuzz_proto.c $(COMMON_SRC) \
	$(wildcard common/*.h) | $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

$(BUILD)/fuzz/fuzz_theme: tests/fuzz/fuzz_theme.c tui/theme.c tui/theme.h \
	| $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

# Seeds in the current protocol, written by the real encoders.
$(BUILD)/fuzz/proto_seeds: tests/fuzz/proto_seeds.c $(COMMON_SRC) \
	$(wildcard common/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^)

# A fuzz target as a test for tests/run: it runs for $$FUZZ_SECONDS.
$(BUILD)/tests/test_fuzz_%: $(BUILD)/fuzz/fuzz_% $(BUILD)/fuzz/proto_seeds \
	tests/fuzz/run
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec "%s/tests/fuzz/run" "%s" %s "$${FUZZ_SECONDS:-%s}"\n' \
		'$(CURDIR)' '$(abspath $(BUILD))' '$*' '$(FUZZ_CHECK_SECONDS)' >$@
	@chmod +x $@

check: $(TEST_DEPS_STAMP) all $(UNIT_BIN) $(ASAN_BIN) $(WORKLOAD_BIN) $(WRAP_BIN) \
	$(AUTOWRAP_BIN) \
	$(INVARIANT_PLUGIN) $(INTEG_BIN) \
	$(BUILD)/tsan/test_stress $(BUILD)/tsan/test_lfstack $(BUILD)/tsan/test_serve \
	$(BUILD)/tsan/test_order_merge $(BUILD)/tests/test_bench \
	$(FUZZ_TESTS)
	@FUZZ_SECONDS=$(FUZZ_CHECK_TIME) tests/run $(BUILD)

# make check as a new user would run it: in a debootstrap chroot of Debian
# 12 with only git, make and ca-certificates, on a clone of HEAD.
check-fresh:
	@tests/fresh

# Each fuzz target for FUZZ_SECONDS; fails on any crash, naming the input.
fuzz: $(FUZZ_BIN)
	@rc=0; for t in $(FUZZ_TARGETS); do \
	  tests/fuzz/run $(BUILD) $$t $(FUZZ_SECONDS) || rc=1; \
	done; exit $$rc

# Bench programs: optimised like real code, -g so call sites resolve.
$(BUILD)/bench/%: tests/bench/%.c tests/bench/bench.c tests/bench/bench.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -o $@ $< tests/bench/bench.c -lpthread

# make check runs a smoke of the bench (1 pair, tiny sizes, no memcached):
# every scenario must run and report numbers; timing is never judged.
$(BUILD)/tests/test_bench: tests/bench/run $(BENCH_BIN)
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec "%s" --smoke -b "%s"\n' "$(CURDIR)/tests/bench/run" "$(abspath $(BUILD))" >$@
	chmod +x $@

# Overhead: each scenario bare and watched, alternating; one table of
# medians and ratios against the targets. BENCH_ARGS go to tests/bench/run
# (-p PAIRS, -s SCENARIOS, ...; tests/bench/run -h lists them).
bench: all $(BENCH_BIN)
	@tests/bench/run -b $(BUILD) $(BENCH_ARGS)

# The live screen on a terminal (q quits); five batch tables otherwise.
demo: all $(BUILD)/tests/wl_demo
	@if [ -t 0 ] && [ -t 1 ]; then \
	  $(BUILD)/qsptop -d 1 -- $(BUILD)/tests/wl_demo; \
	else \
	  $(BUILD)/qsptop -b -n 5 -d 1 -- $(BUILD)/tests/wl_demo; \
	fi

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/qsptop
	install -m 755 $(BUILD)/qsptop $(DESTDIR)$(PREFIX)/bin/qsptop
	install -m 644 $(BUILD)/libqsptop.so $(DESTDIR)$(PREFIX)/lib/qsptop/libqsptop.so
	install -d $(DESTDIR)$(PREFIX)/share/qsptop/themes
	install -m 644 themes/*.theme $(DESTDIR)$(PREFIX)/share/qsptop/themes/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/doc/qsptop
	install -m 644 docs/qsptop.1 $(DESTDIR)$(PREFIX)/share/man/man1/qsptop.1
	install -m 644 docs/json-schema.md README.md $(DESTDIR)$(PREFIX)/share/doc/qsptop/

# Remove what install put there, and its directories when left empty.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/qsptop \
	  $(DESTDIR)$(PREFIX)/lib/qsptop/libqsptop.so \
	  $(DESTDIR)$(PREFIX)/share/man/man1/qsptop.1 \
	  $(DESTDIR)$(PREFIX)/share/doc/qsptop/json-schema.md \
	  $(DESTDIR)$(PREFIX)/share/doc/qsptop/README.md \
	  $(addprefix $(DESTDIR)$(PREFIX)/share/qsptop/themes/,$(notdir $(wildcard themes/*.theme)))
	-rmdir $(DESTDIR)$(PREFIX)/lib/qsptop $(DESTDIR)$(PREFIX)/share/qsptop/themes \
	  $(DESTDIR)$(PREFIX)/share/qsptop $(DESTDIR)$(PREFIX)/share/doc/qsptop 2>/dev/null

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/asan/obj -name '*.d' 2>/dev/null)
