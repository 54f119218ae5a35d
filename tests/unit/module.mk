# The criterion unit tests: every tests/unit/*.c, plus sources other
# modules list in UNIT_EXTRA_SRCS (code outside libmcvm that is tested).
TESTPROGS += unit-tests
unit-tests_SRCS = $(sort $(wildcard tests/unit/*.c) $(UNIT_EXTRA_SRCS) \
	$(wildcard frontd/sandbox.c))
unit-tests_PKGS := criterion $(HOST_PKGS)
unit-tests_LDLIBS :=

$(OBJ)/tests/unit/%.o: EXTRA_CFLAGS := -Imcvmd -Ivmm -Inetd -Istored -Ifrontd -Iguestd

# Test drivers that play mcvmd share tests/lib/peer.c.
$(OBJ)/tests/netd/%.o $(OBJ)/tests/stored/%.o: EXTRA_CFLAGS := -Itests/lib
