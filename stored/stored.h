#ifndef MCVM_STORED_H
#define MCVM_STORED_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct imsgev;

void	 stored_sandbox(int);
void	 stored_reply_init(struct imsgev *);
void	 textf(char *, size_t, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	 stored_result(uint32_t, int, enum disk_format, uint64_t,
	    const char *);
void	 stored_helper_sandbox(void);

#endif
