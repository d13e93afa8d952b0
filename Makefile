# hapticd - top-level Makefile (the only build system).
#
#   make            build libprox, prox, hapticd
#   make run        install missing packages, build, run hapticd's demo
#   make test       install missing packages, run the suite plainly, under
#                   ASan+UBSan, and the concurrent parts under TSan
#   make bench      benchmarks against FCL, CGAL and cyclictest
#   make data       fetch real meshes (libcgal-demo) into data/
#   make fuzz       libFuzzer on the file formats and OSC (clang; FUZZ_SECONDS each)
#   make install    PREFIX=/usr/local: libprox (shared+static), headers, prox.pc
#
# BUILD=dir puts every output in another folder (parallel builds in one tree).

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
CXX     ?= c++
OPT     ?= -O2
SAN     ?=
VERSION := 0.1.0

RUN_PKGS   := libassimp-dev liblo-dev zlib1g-dev libjansson-dev pkg-config
TEST_PKGS  := $(RUN_PKGS) liblo-tools
BENCH_PKGS := $(TEST_PKGS) g++ libfcl-dev libcgal-dev rt-tests gnuplot-nox
FUZZ_PKGS  := $(TEST_PKGS) clang

WARN    := -std=c17 -Wall -Wextra -pedantic -Werror -Wmissing-prototypes -Wno-unused-function
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS := $(WARN) $(CFLAGS) $(SAN) -D_GNU_SOURCE -fPIC -Icore -Idrivers -Irt -Isim -MMD -MP
LDLIBS  := -lassimp -ljansson -llo -lz -lpthread -lm
ALL_LDFLAGS := $(SAN) $(LDFLAGS)

CORE_SRC := $(wildcard core/*.c)
DRV_SRC  := $(wildcard drivers/*.c)
RT_SRC   := $(filter-out rt/hapticd_main.c,$(wildcard rt/*.c))
SIM_SRC  := $(wildcard sim/*.c)
TEST_SRC := $(wildcard tests/test_*.c)

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
DRV_OBJ  := $(DRV_SRC:%.c=$(BUILD)/%.o)
RT_OBJ   := $(RT_SRC:%.c=$(BUILD)/%.o)
SIM_OBJ  := $(SIM_SRC:%.c=$(BUILD)/%.o)
SVC_OBJ  := $(DRV_OBJ) $(RT_OBJ) $(SIM_OBJ)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

LIBPROX_A  := $(BUILD)/libprox.a
LIBPROX_SO := $(BUILD)/libprox.so.$(VERSION)
LIBSVC_A   := $(BUILD)/libhapticd.a
PROX       := $(BUILD)/prox
HAPTICD    := $(BUILD)/hapticd

.SECONDARY:
.PHONY: all run test test-plain test-asan test-tsan bench data fuzz install clean deps-run deps-test deps-bench deps-fuzz
all: $(LIBPROX_A) $(LIBPROX_SO) $(PROX) $(if $(wildcard rt/hapticd_main.c),$(HAPTICD))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIBPROX_A): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LIBPROX_SO): $(CORE_OBJ)
	$(CC) -shared -Wl,-soname,libprox.so.0 $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

$(LIBSVC_A): $(SVC_OBJ)
	@rm -f $@
	@mkdir -p $(dir $@)
	ar rcs $@ $^

CLI_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard core/cli/*.c))

$(PROX): $(CLI_OBJ) $(LIBPROX_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

$(HAPTICD): $(BUILD)/rt/hapticd_main.o $(LIBSVC_A) $(LIBPROX_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIBSVC_A) $(LIBPROX_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

# test_alloc_fail fails the allocations libprox and libhapticd make, one at a
# time: its link sends their calls and the test's own (no other library's)
# through its wrappers
$(BUILD)/tests/test_alloc_fail: ALL_LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=free

# ---- packages ----
deps-run:
	@sh mk/ensure-packages.sh $(RUN_PKGS)
deps-test:
	@sh mk/ensure-packages.sh $(TEST_PKGS)
deps-bench:
	@sh mk/ensure-packages.sh $(BENCH_PKGS)
deps-fuzz:
	@sh mk/ensure-packages.sh $(FUZZ_PKGS)

# ---- run ----
RUN_ARGS ?= --demo --duration 10
run: deps-run
	@$(MAKE) --no-print-directory all
	$(HAPTICD) $(RUN_ARGS)

# ---- tests ----
# Concurrent parts (rings, the RT loop, the service) also run under TSan.
TSAN_TESTS ?= test_rt_%
test: deps-test
	@$(MAKE) --no-print-directory test-plain test-asan test-tsan 2>&1 | tee $(BUILD)-test.log; \
	 p=0; f=0; for l in $$(grep -E '^(plain|asan\+ubsan|tsan): [0-9]+ passed, [0-9]+ failed$$' $(BUILD)-test.log \
	   | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1,\2/'); do p=$$((p+$${l%,*})); f=$$((f+$${l#*,})); done; \
	 echo "$$p passed, $$f failed"; test $$f -eq 0 && grep -q '^tsan: ' $(BUILD)-test.log

test-plain:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(addprefix $(BUILD)/tests/,$(notdir $(TEST_BIN)))
	@tests/run.sh $(BUILD)/tests plain

test-asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)-asan OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    $(BUILD)-asan/prox $(BUILD)-asan/hapticd $(addprefix $(BUILD)-asan/tests/,$(notdir $(TEST_BIN)))
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HAPTICD_SANITIZED=1 \
	    PROX_BIN=$(BUILD)-asan/prox HAPTICD_BIN=$(BUILD)-asan/hapticd tests/run.sh $(BUILD)-asan/tests asan+ubsan

test-tsan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)-tsan OPT=-O1 SAN="-fsanitize=thread" \
	    $(BUILD)-tsan/hapticd $(addprefix $(BUILD)-tsan/tests/,$(notdir $(filter $(addprefix $(BUILD)/tests/,$(TSAN_TESTS)),$(TEST_BIN))))
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" HAPTICD_SANITIZED=1 HAPTICD_BIN=$(BUILD)-tsan/hapticd \
	    tests/run.sh $(BUILD)-tsan/tests tsan '$(subst %,*,$(TSAN_TESTS))'

# ---- data and benchmarks ----
data:
	@sh bench/fetch-data.sh data

bench: deps-bench all data
	@$(MAKE) --no-print-directory -f bench/bench.mk BUILD=$(BUILD) LDLIBS="$(LDLIBS)" bench

# ---- fuzzing ----
# clang's libFuzzer under ASan+UBSan on what hapticd reads from outside:
# .ist and .vox files, scenarios, OSC datagrams, meshes (OFF, PLY, and every
# suffix assimp names a reader for: fuzz_mesh.c), point
# clouds (.xyz, .obj, .ply, .off; .stl through assimp) (tests/fuzz). Each target
# runs FUZZ_SECONDS from the seeds fuzz_seeds writes (and the shipped
# scenarios) plus what earlier runs found (kept in $(BUILD)-fuzz/corpus); a
# crash stops it, leaves $(BUILD)-fuzz/crash-TARGET-* to replay
# ($(BUILD)-fuzz/fuzz_TARGET FILE) and fails the target.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := ist vox scenario osc mesh cloud
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
fuzz: deps-fuzz
	@$(MAKE) --no-print-directory BUILD=$(BUILD)-fuzz CC=clang OPT=-O1 SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	    $(BUILD)-fuzz/libprox.a $(BUILD)-fuzz/libhapticd.a
	@$(MAKE) --no-print-directory BUILD=$(BUILD) $(LIBPROX_A)
	$(CC) $(WARN) -O1 -g -D_GNU_SOURCE -Icore tests/fuzz/fuzz_seeds.c $(LIBPROX_A) -o $(BUILD)-fuzz/fuzz_seeds $(LDLIBS)
	$(BUILD)-fuzz/fuzz_seeds $(BUILD)-fuzz/corpus
	@mkdir -p $(BUILD)-fuzz/corpus/scenario && cp sim/scenarios/*.sim $(BUILD)-fuzz/corpus/scenario/
	@set -e; for t in $(FUZZ_TARGETS); do \
	    clang $(WARN) -O1 -g -D_GNU_SOURCE $(FUZZ_SAN) -fsanitize=fuzzer -Icore -Idrivers -Irt -Isim tests/fuzz/fuzz_$$t.c \
	        $(BUILD)-fuzz/libhapticd.a $(BUILD)-fuzz/libprox.a -o $(BUILD)-fuzz/fuzz_$$t $(LDLIBS); \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    $(BUILD)-fuzz/fuzz_$$t $(BUILD)-fuzz/corpus/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 \
	        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(BUILD)-fuzz/crash-$$t- 2> $(BUILD)-fuzz/$$t.log \
	        || { tail -n 40 $(BUILD)-fuzz/$$t.log; echo "fuzz: $$t failed (log $(BUILD)-fuzz/$$t.log)"; exit 1; }; \
	    grep -E '^stat::number_of_executed_units' $(BUILD)-fuzz/$$t.log | sed "s/^/fuzz: $$t /"; \
	done

# ---- install ----
install: $(LIBPROX_A) $(LIBPROX_SO) $(PROX)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/prox $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(LIBPROX_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBPROX_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libprox.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libprox.so.0
	ln -sf libprox.so.0 $(DESTDIR)$(PREFIX)/lib/libprox.so
	install -m 644 core/prox*.h $(DESTDIR)$(PREFIX)/include/prox/
	install -m 755 $(PROX) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' mk/prox.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/prox.pc

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-*.log build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
