# ringtrace - top-level driver. CMake does the building; this file gives the
# commands the README promises: make, make demo, make check, make install,
# make bench.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps demo check install bench clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

deps:
	scripts/install-deps.sh

demo: deps build
	scripts/demo.sh $(BUILD)

check: deps build
	scripts/check.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: deps build
	bench/run.sh $(BUILD) $(if $(QUICK),--quick,)

clean:
	rm -rf $(BUILD)
