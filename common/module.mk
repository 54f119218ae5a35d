LIBMCVM := $(OBJ)/libmcvm.a

# libmcvm: the code every host program shares.  Only this file lists it.
LIBMCVM_SRCS := common/log.c common/imsg.c common/msg.c common/proto.c \
	common/proc.c common/privdrop.c common/sandbox.c common/validate.c \
	common/config.c common/hash.c common/rdfile.c common/agent.c \
	common/utf8.c common/b64.c common/tools.c \
	common/netslot.c common/msg_proc.c common/msg_ctl.c \
	common/msg_front.c common/msg_net.c common/msg_store.c common/msg_vmm.c \
	common/jschema.c common/keys.c common/outbuf.c

$(GEN)/parse.c: common/parse.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -Wno-yacc -o $@ $<
