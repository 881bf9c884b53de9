# ringtrace - top-level driver. CMake does the building; this file gives the
# commands the README promises: make, make demo, make check, make install,
# make bench. Quiet by default: one line per step, compiler messages and
# errors; `make V=1` shows every command and CMake's own output.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
V ?= 0

ifeq ($(V),1)
Q :=
say := @true
quiet :=
cmake_log :=
build_flags := --verbose
else
Q := @
say := @echo
quiet := >/dev/null
cmake_log := --log-level=WARNING
build_flags :=
endif

.PHONY: all build deps demo check install bench clean model fuzz

all: build

$(BUILD)/CMakeCache.txt:
	$(say) "  CONFIGURE $(BUILD)"
	$(Q)cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(cmake_log) $(CMAKE_FLAGS) $(quiet)

# Compiler warnings and errors go to stderr and show; the progress lines go
# to $(BUILD)/build.log unless V=1.
build: $(BUILD)/CMakeCache.txt
	$(say) "  BUILD     $(BUILD)"
	$(Q)cmake --build $(BUILD) -j $(JOBS) $(build_flags) $(if $(filter 1,$(V)),,>$(BUILD)/build.log)

deps: deps-check

deps-%:
	$(Q)scripts/install-deps.sh $* $(BUILD)

demo: deps-demo build
	$(Q)scripts/demo.sh $(BUILD)

check: deps-check build
	$(Q)scripts/check.sh $(BUILD)

install: deps-build build
	$(say) "  INSTALL   $(PREFIX)"
	$(Q)cmake --install $(BUILD) --prefix $(PREFIX) $(quiet)

bench: deps-bench build
	$(Q)bench/run.sh $(BUILD) $(if $(QUICK),--quick,)

# The libFuzzer harnesses (tests/fuzz), FUZZ_SECONDS each, built with clang
# in build-fuzz/ (docs/reliability.md); make check replays their corpora.
FUZZ_SECONDS ?= 60
fuzz:
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh build-fuzz

# The ring buffer's model in every configuration and mutation
# (tests/model, docs/reliability.md); make check runs the discard
# configuration, every mutation but the snapshot's, and the dead-writer,
# recovery and atomic-mode configurations without consumer operations
# during the run.
model:
	$(Q)tests/model/run_model.sh "" "!M_COMPLETE_IGNORES_ANNOUNCED" "!M_NO_ANNOUNCE_SLOW" \
		"!M_FAST_NO_ANNOUNCE" "!M_COMPLETE_ORDER" "!M_CLOCK_OUTSIDE" "!M_CS_NO_HOT_CHECK" \
		"OVERWRITE,PREFILL,LIB_SZ=2" "!OVERWRITE,PREFILL,LIB_SZ=2,M_PUSH_UNCOUNTED" \
		"OVERWRITE,PREFILL,LIB_SZ=2,SNAPSHOT" "!OVERWRITE,PREFILL,LIB_SZ=2,SNAPSHOT,M_SNAPSHOT_NO_RECHECK" \
		"DEAD" "!DEAD,M_VOID_NO_RANGE" "!DEAD,M_NO_BOUNDS_SLOW" "RECOVER" \
		"!RECOVER,M_CLOSE_DEAD_VOIDS" "!RECOVER,M_CUT_AT_WC" \
		"SMP" "SMP,OVERWRITE" "SMP,LIB_SZ=2" "!SMP,M_SMP_NO_CLAMP"

clean:
	$(say) "  CLEAN     $(BUILD)"
	$(Q)rm -rf $(BUILD)

# Sanitizer legs (docs/sanitizers.md), each in its own build directory:
# AddressSanitizer + UBSan over the unit, reader, view, daemon and symbols tests,
# ThreadSanitizer over the stress and daemon tests.
SAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan

.PHONY: check-sanitize check-tsan

check-sanitize: deps-check
	$(Q)V=$(V) scripts/check-sanitize.sh $(SAN_BUILD) address

check-tsan: deps-check
	$(Q)V=$(V) scripts/check-sanitize.sh $(TSAN_BUILD) thread
