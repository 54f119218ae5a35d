/* mcvm-netd's port forwards; see forward.c. */
#ifndef MCVM_NETD_FORWARD_H
#define MCVM_NETD_FORWARD_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct mcvm_config;

void	 netd_fwd_init(struct event_base *, const struct mcvm_config *);
int	 netd_fwd_open(uint32_t, uint32_t, uint16_t, uint16_t, uint16_t *,
	    char *, size_t);
void	 netd_fwd_close_slot(uint32_t);

#endif
