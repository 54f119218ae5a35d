# Every test suite, in the order its target runs them: first what needs
# neither root nor a built image, then each daemon alone, then the whole
# suite over HTTP, then VMs end to end.  README's "Tests" section quotes
# `make suites` and describes them in this order (the manlint suite
# checks it).  Suites are tests/suites/NAME, benchmarks tests/bench/NAME.
UNIT_SUITES := unit
CHECK_SUITES := manlint fuzz-smoke fuzz-qmp fuzz-front fuzz-mcp \
	fuzz-mcvmd daemons stored netd vmm guest iso mcp conformance
E2E_SUITES := vms reflink startup hostile network ops attach
BENCH_SUITES := http netd guest vms network images
# make fuzz runs tests/suites/fuzz, the longer runs of the fuzz targets.
FUZZ_SUITES := fuzz

# A suite script no list names is an error, not a suite that never runs.
SUITES_UNLISTED := $(filter-out $(UNIT_SUITES) $(CHECK_SUITES) \
	$(E2E_SUITES) $(FUZZ_SUITES),$(notdir $(wildcard tests/suites/*)))
BENCH_UNLISTED := $(filter-out $(BENCH_SUITES), \
	$(notdir $(wildcard tests/bench/*)))
ifneq ($(SUITES_UNLISTED)$(BENCH_UNLISTED),)
$(error tests/suites.mk lists no $(SUITES_UNLISTED) $(BENCH_UNLISTED))
endif

# The lists as README quotes them, wrapped at 72 columns.
SUITES_WRAP := { l = sprintf("%-11s", $$1 " " $$2); \
	for (i = 3; i <= NF; i++) { \
		if (length(l) + length($$i) >= 72) { \
			print l; l = "           " \
		} \
		l = l " " $$i \
	} print l }
suites:
	@{ echo "make unit:  $(UNIT_SUITES)"; \
	echo "make check: $(UNIT_SUITES) $(CHECK_SUITES) $(E2E_SUITES)"; \
	echo "make e2e:   $(E2E_SUITES)"; \
	echo "make fuzz:  $(FUZZ_SUITES)"; \
	echo "make bench: $(BENCH_SUITES)"; } | awk '$(SUITES_WRAP)'
