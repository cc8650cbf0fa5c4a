# SPDX-License-Identifier: GPL-3.0-or-later
# Two commands do everything: `make run` and `make test`. Both install missing Debian packages,
# configure and build Release, then run the app or the whole test suite.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
CMAKE_FLAGS += -DATTNSCOPE_WERROR=ON
endif

.PHONY: all deps configure build run test format format-check bench fuzz sanitize clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash scripts/run-app.sh $(BUILD)

# In CI the tree must also follow .clang-format (see format-check).
test: build
	@if [ "$(CI)" = "true" ]; then bash scripts/format-check.sh; fi
	@cd $(BUILD) && QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j $(JOBS)

# Reformat every C++ file in place, or only check that the tree follows .clang-format.
format: deps
	@bash scripts/format-check.sh --fix

format-check: deps
	@bash scripts/format-check.sh

# Benchmarks and the Python baseline, then BENCHMARKS.md (see scripts/bench.sh). Not part of test.
BENCH_BUILD ?= $(BUILD)-bench
bench: deps
	@cmake -S . -B $(BENCH_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_BUILD_BENCH=ON >/dev/null
	@cmake --build $(BENCH_BUILD) -j $(JOBS) --target attnscope-bench attnscope-cli
	@bash scripts/bench.sh $(BENCH_BUILD)

fuzz: deps
	@bash scripts/fuzz.sh

sanitize: deps
	@cmake --preset sanitize >/dev/null
	@cmake --build --preset sanitize -j $(JOBS)
	@ctest --preset sanitize

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(BUILD)-fuzz $(BUILD)-sanitize
