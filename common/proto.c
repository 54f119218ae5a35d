#include "proto.h"

const char *
imsg_type_name(uint32_t type)
{
	switch (type) {
#define IMSG_NAME(name, val)	case val: return #name;
	IMSG_TYPES(IMSG_NAME)
#undef IMSG_NAME
	default:
		return "IMSG_UNKNOWN";
	}
}
