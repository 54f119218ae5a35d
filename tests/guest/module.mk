# The guest boot test driver (host side, same codec as the agent).
TESTPROGS += guest-driver
guest-driver_SRCS := tests/guest/driver.c tests/guest/agentc.c \
	tests/lib/peer.c
$(OBJ)/tests/guest/%.o: EXTRA_CFLAGS := -Itests/lib
