#include "proto.h"

const char *
imsg_type_name(uint32_t type)
{
	switch (type) {
#define IMSG_NAME(name, val, reply)	case val: return #name;
	IMSG_TYPES(IMSG_NAME)
#undef IMSG_NAME
	default:
		return "IMSG_UNKNOWN";
	}
}

/* The reply that ends a request of this type; IMSG_NONE for the others. */
uint32_t
imsg_reply_type(uint32_t type)
{
	switch (type) {
#define IMSG_REPLY(name, val, reply)	case val: return reply;
	IMSG_TYPES(IMSG_REPLY)
#undef IMSG_REPLY
	default:
		return IMSG_NONE;
	}
}
