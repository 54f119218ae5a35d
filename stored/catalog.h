/*
 * The image catalog: the operator's base images named in mcvm.conf, each
 * file pinned by SHA-256.  Files are opened as root before the privilege
 * drop and kept open; they are hashed in chunks after start-up, and an
 * image is served only once every one of its files matched its pin.
 */
#ifndef MCVM_STORED_CATALOG_H
#define MCVM_STORED_CATALOG_H

#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "config.h"
#include "validate.h"

#define CATALOG_READ_SIZE	(1024 * 1024)	/* one pread while hashing */
#define CATALOG_TEXT_MAX	256
#define CATALOG_BACKING_PREFIX	"mcvm-catalog:"	/* an overlay's backing */
#define CATALOG_CACHE_MAX	(64 * 1024)	/* bytes of the record file */

enum catalog_state {
	CAT_PENDING = 0,	/* not yet verified: requests get EAGAIN */
	CAT_OK,
	CAT_FAILED,		/* never served */
};

enum catalog_file {
	CAT_KERNEL = 0,
	CAT_INITRD,
	CAT_DISK,
	CAT_NFILES,
};

struct catalog_file_ent {
	int		 fd;		/* -1: absent (initrd) or failed */
	const char	*path;		/* from the config */
	const char	*sha256;	/* pinned, lower-case hex */
	struct stat	 st;		/* as verified */
	int		 known;		/* same file as verified before */
};

struct catalog_image {
	const struct image_conf	*conf;
	struct catalog_file_ent	 files[CAT_NFILES];
	enum catalog_state	 state;
	char			 text[CATALOG_TEXT_MAX];
	uint64_t		 disk_bytes;
	unsigned int		 users;	/* VM overlays backed by it */
	int			 hashed; /* a file was hashed this time */
	/* hashing progress */
	int			 cur;	/* enum catalog_file */
	off_t			 off;
};

/* A VM disk that depends on a catalog image. */
struct catalog_dep {
	TAILQ_ENTRY(catalog_dep) entry;
	char			 vm[ID_MAX + 1];
	struct catalog_image	*image;
};

struct catalog {
	struct catalog_image	 images[CONF_MAX_IMAGES];
	size_t			 n;
	size_t			 next;	/* the image being verified */
	EVP_MD_CTX		*md;
	uint8_t			*buf;	/* CATALOG_READ_SIZE */
	int			 changed; /* the records need writing */
	TAILQ_HEAD(, catalog_dep) deps;
};

void	 imgcat_open(struct catalog *, const struct mcvm_config *);
struct catalog_image *imgcat_verify_step(struct catalog *, uint64_t);
int	 imgcat_verified(const struct catalog *);
int	 imgcat_records_load(struct catalog *, int, const char *);
int	 imgcat_records_save(struct catalog *, int, const char *);
struct catalog_image *imgcat_lookup(struct catalog *, const char *);
int	 imgcat_image_usable(struct catalog_image *, char *, size_t);
int	 imgcat_dep_add(struct catalog *, const char *, const char *);
void	 imgcat_dep_del(struct catalog *, const char *);
int	 imgcat_remove_check(const struct catalog_image *, char *, size_t);
void	 imgcat_close(struct catalog *);

#endif
