# The criterion unit tests: every tests/unit/*.c, plus sources other
# modules list in UNIT_EXTRA_SRCS (code outside libmcvm that is tested).
TESTPROGS += unit-tests
unit-tests_SRCS = $(wildcard tests/unit/*.c) $(UNIT_EXTRA_SRCS)
unit-tests_PKGS := criterion libevent sqlite3 libseccomp libcap-ng libcrypto
UNIT_SUITES += unit
