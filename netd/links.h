/* mcvm-netd's kernel side; see links.c. */
#ifndef MCVM_NETD_LINKS_H
#define MCVM_NETD_LINKS_H

#include <stddef.h>
#include <stdint.h>

/* /dev/net/tun, bound into netd's chroot (see netd.c). */
#define NETD_TUN_DEV		"/dev/net/tun"
#define NETD_TUN_NAME		"tun"
#define NETD_TUN_PATH		"/" NETD_TUN_NAME

struct cidr;

void	 netd_links_init(void);
int	 netd_nft_run(const char *, char *, size_t, char *, size_t);
int	 netd_table_delete(uint32_t);
int	 netd_tables_list(void (*)(uint32_t, void *), void *);
int	 netd_vm_netns(uint32_t, int, int *, int *, char *, size_t);
int	 netd_host_link_setup(uint32_t, const char *, uint32_t, char *,
	    size_t);
int	 netd_host_link_delete(uint32_t);
int	 netd_host_links_list(void (*)(uint32_t, const char *, void *),
	    void *);
int	 netd_ipv4_forwarding(void);
int	 netd_link_exists(const char *);
int	 netd_pool_overlaps(const struct cidr *, char *, size_t);

#endif
