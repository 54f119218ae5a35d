LIBMCVM := $(OBJ)/libmcvm.a

# Other modules may append to LIBMCVM_SRCS.
LIBMCVM_SRCS := common/log.c common/imsg.c common/msg.c common/proto.c \
	common/proc.c common/privdrop.c common/sandbox.c common/validate.c \
	common/config.c common/hash.c common/rdfile.c

$(GEN)/parse.c: common/parse.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -Wno-yacc -o $@ $<
