/*
 * Configuration defaults and the value parsers the grammar uses.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "validate.h"

void
config_defaults(struct mcvm_config *c)
{
	memset(c, 0, sizeof(*c));
	(void)snprintf(c->statedir, sizeof(c->statedir), "%s",
	    MCVM_STATEDIR_DEFAULT);
	(void)snprintf(c->rundir, sizeof(c->rundir), "%s", MCVM_RUNDIR_DEFAULT);
	c->accel = ACCEL_AUTO;
	c->shared_templates = 1;
	c->warm_clones = WARM_CLONES_DEFAULT;
	c->vm_uid_first = VM_UID_FIRST_DEFAULT;
	c->vm_uid_last = VM_UID_LAST_DEFAULT;
	(void)snprintf(c->frontd_user, sizeof(c->frontd_user), "%s",
	    FRONTD_USER_DEFAULT);
	(void)snprintf(c->stored_user, sizeof(c->stored_user), "%s",
	    STORED_USER_DEFAULT);
	c->body_limit = BODY_LIMIT_DEFAULT;
	c->header_limit = HEADER_LIMIT_DEFAULT;
	c->max_connections = CONNECTIONS_DEFAULT;
	c->peer_connections = PEER_CONNECTIONS_DEFAULT;
	c->idle_timeout = IDLE_TIMEOUT_DEFAULT;
	c->header_timeout = HEADER_TIMEOUT_DEFAULT;
	c->request_timeout = REQUEST_TIMEOUT_DEFAULT;
	c->rate = RATE_DEFAULT;
	c->rate_burst = RATE_BURST_DEFAULT;
	c->unauth_rate = UNAUTH_RATE_DEFAULT;
	c->unauth_burst = UNAUTH_BURST_DEFAULT;
	c->host_limits.max_vms = HOST_MAX_VMS_DEFAULT;
	c->host_limits.max_memory = HOST_MAX_MEMORY_DEFAULT;
	c->host_limits.max_storage = HOST_MAX_STORAGE_DEFAULT;
	c->host_limits.max_vcpus = HOST_MAX_VCPUS_DEFAULT;
	c->ws_limits.max_vms = WS_MAX_VMS_DEFAULT;
	c->ws_limits.max_memory = WS_MAX_MEMORY_DEFAULT;
	c->ws_limits.max_storage = WS_MAX_STORAGE_DEFAULT;
	c->ws_limits.max_vcpus = WS_MAX_VCPUS_DEFAULT;
	c->ws_limits.max_images = WS_MAX_IMAGES_DEFAULT;
	c->host_limits.max_images = LIMIT_IMAGES_MAX;
	c->vm_memory = VM_MEMORY_DEFAULT;
	c->vm_vcpus = VM_VCPUS_DEFAULT;
	c->vm_idle_seconds = VM_IDLE_DEFAULT;
	c->vm_idle_mode = IDLE_HIBERNATE;
}

static int
port_parse(const char *s, uint16_t *port)
{
	char		*ep;
	unsigned long	 v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoul(s, &ep, 10);
	if (errno != 0 || *ep != '\0' || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/*
 * "127.0.0.1:8090", "[::1]:8090", or an absolute path for a unix socket.
 * Names are not resolved: the config holds addresses.
 */
int
listen_addr_parse(const char *s, struct listen_addr *la)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&la->ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&la->ss;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&la->ss;
	char			 host[INET6_ADDRSTRLEN + 2];
	const char		*colon;
	uint16_t		 port;
	size_t			 hlen;

	memset(la, 0, sizeof(*la));
	if (strlen(s) >= sizeof(la->text))
		return -1;
	memcpy(la->text, s, strlen(s) + 1);
	if (s[0] == '/') {
		if (strlen(s) >= sizeof(sun->sun_path))
			return -1;
		la->is_unix = 1;
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, s, strlen(s) + 1);
		la->sslen = sizeof(*sun);
		return 0;
	}
	if ((colon = strrchr(s, ':')) == NULL ||
	    port_parse(colon + 1, &port) == -1)
		return -1;
	hlen = (size_t)(colon - s);
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return -1;
		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &sin6->sin6_addr) != 1)
			return -1;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		la->sslen = sizeof(*sin6);
		return 0;
	}
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -1;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	la->sslen = sizeof(*sin);
	return 0;
}

/* "a.b.c.d/n", "x::y/n", or a bare address (a host prefix). */
int
cidr_parse(const char *s, struct cidr *c)
{
	char		 buf[INET6_ADDRSTRLEN + 4], *slash, *ep;
	unsigned long	 len;
	unsigned int	 max, i, bits;

	memset(c, 0, sizeof(*c));
	if (strlen(s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, strlen(s) + 1);
	if ((slash = strchr(buf, '/')) != NULL)
		*slash++ = '\0';
	if (inet_pton(AF_INET, buf, c->addr) == 1) {
		c->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, c->addr) == 1) {
		c->family = AF_INET6;
		max = 128;
	} else
		return -1;
	c->prefixlen = max;
	if (slash != NULL) {
		if (!isdigit((unsigned char)slash[0]))
			return -1;
		errno = 0;
		len = strtoul(slash, &ep, 10);
		if (errno != 0 || *ep != '\0' || len > max)
			return -1;
		c->prefixlen = (unsigned int)len;
	}
	/* Host bits must be zero: "10.0.0.1/8" is a mistake, not a net. */
	for (i = c->prefixlen; i < max; i++) {
		bits = c->addr[i / 8] & (0x80u >> (i % 8));
		if (bits != 0)
			return -1;
	}
	return 0;
}

/* "512", "64K", "512M", "2G", "1T" (powers of 1024). */
int
size_parse(const char *s, uint64_t *out)
{
	char		*ep;
	unsigned long long v;
	unsigned int	 shift = 0;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &ep, 10);
	if (errno != 0)
		return -1;
	if (*ep != '\0') {
		switch (toupper((unsigned char)*ep)) {
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		default:
			return -1;
		}
		if (ep[1] != '\0' && !(toupper((unsigned char)ep[1]) == 'B' &&
		    ep[2] == '\0'))
			return -1;
	}
	if (shift > 0 && v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* 0 if v is within a limit's bounds, else -1 with why. */
int
limit_check(enum limit_field f, uint64_t v, char *why, size_t len)
{
	switch (f) {
	case LIMIT_VMS:
		if (v >= 1 && v <= LIMIT_VMS_MAX)
			return 0;
		(void)snprintf(why, len, "vms must be 1 to %d", LIMIT_VMS_MAX);
		return -1;
	case LIMIT_VCPUS:
		if (v >= 1 && v <= LIMIT_VCPUS_MAX)
			return 0;
		(void)snprintf(why, len, "vcpus must be 1 to %d",
		    LIMIT_VCPUS_MAX);
		return -1;
	case LIMIT_MEMORY:
		if (v >= (uint64_t)VM_MEMORY_MIN_MIB << 20 &&
		    v <= LIMIT_SIZE_MAX)
			return 0;
		(void)snprintf(why, len, "memory limit must be %dM (one VM's "
		    "minimum) or more", VM_MEMORY_MIN_MIB);
		return -1;
	case LIMIT_STORAGE:
		if (v >= LIMIT_STORAGE_MIN && v <= LIMIT_SIZE_MAX)
			return 0;
		(void)snprintf(why, len, "storage limit must be 1M or more");
		return -1;
	}
	(void)snprintf(why, len, "unknown limit");
	return -1;
}

/*
 * A limit as mcvmctl set-quota takes it: a count (vms, vcpus) or a size
 * with size_parse()'s suffixes (memory, storage), within limit_check()'s
 * bounds, or "default", 0, for the config's.  -1 with why.
 */
int
limit_parse(enum limit_field f, const char *s, uint64_t *out, char *why,
    size_t len)
{
	char		*ep;
	unsigned long long v;
	uint64_t	 u;

	if (strcmp(s, LIMIT_DEFAULT) == 0) {
		*out = 0;
		return 0;
	}
	if (f == LIMIT_MEMORY || f == LIMIT_STORAGE) {
		if (size_parse(s, &u) == -1) {
			(void)snprintf(why, len, "invalid size %.64s: use a "
			    "number with K, M, G or T, or %s", s,
			    LIMIT_DEFAULT);
			return -1;
		}
	} else {
		errno = 0;
		v = strtoull(s, &ep, 10);
		if (!isdigit((unsigned char)s[0]) || *ep != '\0' ||
		    errno != 0) {
			(void)snprintf(why, len, "invalid number %.64s: use a "
			    "count, or %s", s, LIMIT_DEFAULT);
			return -1;
		}
		u = v;
	}
	if (limit_check(f, u, why, len) == -1)
		return -1;
	*out = u;
	return 0;
}
