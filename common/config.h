/*
 * mcvm.conf: see mcvm.conf(5).  Parsed by parse.y into struct mcvm_config.
 * Every daemon reads the same file with the same -D macros, before it drops
 * privileges.
 */
#ifndef MCVM_CONFIG_H
#define MCVM_CONFIG_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define MCVM_CONF_DEFAULT	"/etc/mcvm/mcvm.conf"
#define MCVM_STATEDIR_DEFAULT	"/var/lib/mcvm"
#define MCVM_RUNDIR_DEFAULT	"/run/mcvm"
#define MCVM_CONTROL_SOCK	"control.sock"
#define MCVM_EMPTY_DIR		"empty"	/* under rundir: chroot for children */

#define CONF_MAX_LISTEN		8
#define CONF_MAX_ALLOW		16	/* hosts, origins */
#define CONF_MAX_BLOCKED	64
#define CONF_MAX_BIND		8
#define CONF_MAX_IMAGES		32
#define CONF_NAME_MAX		64	/* user and image names */
#define CONF_STR_MAX		256	/* hosts, origins */

/* Defaults, overridden by the config. */
#define FRONTD_USER_DEFAULT		"_mcvm"
#define STORED_USER_DEFAULT		"_mcvmstore"
#define LISTEN_DEFAULT			"127.0.0.1:8090"
#define BODY_LIMIT_DEFAULT		(1024 * 1024)
#define HEADER_LIMIT_DEFAULT		(16 * 1024)
#define CONNECTIONS_DEFAULT		256
#define PEER_CONNECTIONS_DEFAULT	32	/* per address or uid */
#define IDLE_TIMEOUT_DEFAULT		60
#define HEADER_TIMEOUT_DEFAULT		10
#define REQUEST_TIMEOUT_DEFAULT		30
#define RATE_DEFAULT			50	/* requests per second */
#define RATE_BURST_DEFAULT		100
#define UNAUTH_RATE_DEFAULT		5	/* per peer, per second */
#define UNAUTH_BURST_DEFAULT		50
#define WARM_CLONES_DEFAULT		1	/* warm clones per shared template */
#define WARM_CLONES_MAX			4
#define VM_UID_FIRST_DEFAULT		2000000
#define VM_UID_LAST_DEFAULT		2000999
#define HOST_MAX_VMS_DEFAULT		32
#define HOST_MAX_MEMORY_DEFAULT		(16384ULL << 20)
#define HOST_MAX_STORAGE_DEFAULT	(200ULL << 30)
#define HOST_MAX_VCPUS_DEFAULT		64
#define WS_MAX_VMS_DEFAULT		4
#define WS_MAX_MEMORY_DEFAULT		(4096ULL << 20)
#define WS_MAX_STORAGE_DEFAULT		(40ULL << 30)
#define WS_MAX_IMAGES_DEFAULT		64
#define LIMIT_IMAGES_MAX		256	/* IMAGE_SCAN_MAX */
#define WS_MAX_VCPUS_DEFAULT		8
#define LIMIT_VCPUS_MAX			65536	/* a limits block's vcpus */
#define LIMIT_VMS_MAX			4096	/* a limits block's vms */
#define LIMIT_STORAGE_MIN		(1ULL << 20)
#define LIMIT_SIZE_MAX			((uint64_t)INT64_MAX)	/* state.db's */
#define LIMIT_DEFAULT			"default"	/* the config's */
#define VM_MEMORY_DEFAULT		(512ULL << 20)
#define VM_VCPUS_DEFAULT		1
#define VM_IDLE_DEFAULT			300

enum accel_mode {
	ACCEL_AUTO = 0,
	ACCEL_KVM,
	ACCEL_TCG,
};

enum idle_mode {
	IDLE_HIBERNATE = 0,
	IDLE_PAUSE,
};

struct listen_addr {
	int			 is_unix;
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	char			 text[CONF_STR_MAX];	/* as written */
};

struct cidr {
	int		 family;
	uint8_t		 addr[16];
	unsigned int	 prefixlen;
};

struct limits {
	uint32_t	 max_vms;
	uint64_t	 max_memory;		/* bytes */
	uint64_t	 max_storage;		/* bytes */
	uint32_t	 max_vcpus;		/* of all those VMs */
	uint32_t	 max_images;		/* in a workspace's store */
};

/* A limits block's values, the config's and mcvmctl set-quota's. */
enum limit_field {
	LIMIT_VMS = 0,
	LIMIT_MEMORY,		/* bytes */
	LIMIT_VCPUS,
	LIMIT_STORAGE,		/* bytes */
};

struct image_conf {
	char		 name[CONF_NAME_MAX];
	char		 kernel[PATH_MAX];
	char		 kernel_sha256[65];
	char		 initrd[PATH_MAX];
	char		 initrd_sha256[65];
	char		 disk[PATH_MAX];
	char		 disk_sha256[65];
};

struct mcvm_config {
	char		 conffile[PATH_MAX];
	char		 statedir[PATH_MAX];
	char		 rundir[PATH_MAX];
	char		 control_sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		 control_group[CONF_NAME_MAX];	/* "" = root only */
	enum accel_mode	 accel;
	int		 shared_templates;	/* templates shared|stream */
	uint32_t	 warm_clones;		/* per shared template */
	uint32_t	 vm_uid_first;
	uint32_t	 vm_uid_last;

	/* frontd */
	char		 frontd_user[CONF_NAME_MAX];
	struct listen_addr listen[CONF_MAX_LISTEN];
	size_t		 nlisten;
	char		 tls_cert[PATH_MAX];		/* "" = no TLS */
	char		 tls_key[PATH_MAX];
	uint64_t	 body_limit;
	uint64_t	 header_limit;
	uint32_t	 max_connections;
	uint32_t	 peer_connections;
	uint32_t	 idle_timeout;			/* seconds */
	uint32_t	 header_timeout;		/* seconds */
	uint32_t	 request_timeout;		/* seconds */
	uint32_t	 rate;				/* per workspace, per s */
	uint32_t	 rate_burst;
	uint32_t	 unauth_rate;			/* per peer, per s */
	uint32_t	 unauth_burst;
	char		 allow_host[CONF_MAX_ALLOW][CONF_STR_MAX];
	size_t		 nallow_host;
	char		 allow_origin[CONF_MAX_ALLOW][CONF_STR_MAX];
	size_t		 nallow_origin;

	/* stored */
	char		 stored_user[CONF_NAME_MAX];

	/* netd */
	char		 uplink[16];			/* IFNAMSIZ */
	struct cidr	 pool;
	int		 pool_set;
	struct cidr	 resolver;			/* prefixlen 32/128 */
	int		 resolver_set;
	struct cidr	 blocked[CONF_MAX_BLOCKED];
	size_t		 nblocked;
	struct cidr	 forward_bind[CONF_MAX_BIND];
	size_t		 nforward_bind;

	/* quotas and defaults */
	struct limits	 host_limits;
	struct limits	 ws_limits;
	uint64_t	 vm_memory;			/* bytes */
	uint32_t	 vm_vcpus;
	uint32_t	 vm_vcpus_limit;		/* per VM; 0 = host CPUs */
	uint32_t	 vm_idle_seconds;		/* 0 = never */
	enum idle_mode	 vm_idle_mode;

	struct image_conf images[CONF_MAX_IMAGES];
	size_t		 nimages;
};

void	 config_defaults(struct mcvm_config *);
int	 config_parse(const char *, struct mcvm_config *);
int	 config_define(const char *);
void	 config_clear_macros(void);
const char *config_lasterror(void);
int	 listen_addr_parse(const char *, struct listen_addr *);
int	 cidr_parse(const char *, struct cidr *);
int	 size_parse(const char *, uint64_t *);
int	 limit_check(enum limit_field, uint64_t, char *, size_t);
int	 limit_parse(enum limit_field, const char *, uint64_t *, char *,
	    size_t);

#endif
