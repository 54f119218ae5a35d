/*
 * Workspace image stores: <statedir>/workspaces/<ws id>/images/, one file
 * per image, named NAME.FORMAT.  See images.c.
 */
#ifndef MCVM_STORED_IMAGES_H
#define MCVM_STORED_IMAGES_H

#include <stdint.h>

#include "msg_store.h"
#include "proto.h"
#include "validate.h"

#define WS_DIR			"workspaces"
#define WS_IMAGES_DIR		"images"
#define IMAGE_NEW_PREFIX	".new-"		/* being made; never listed */
#define IMAGE_BACKING_PREFIX	"mcvm-image:"	/* an image of the same store */
#define IMAGE_SCAN_MAX		256		/* files read per workspace */
#define IMAGE_CHAIN_MAX		8		/* backing files below one */
#define IMAGE_FREE_RESERVE	(1ULL << 30)	/* kept free on the store */
#define IMAGE_SIZE_MAX		(16ULL << 40)	/* one image's virtual size */
#define IMAGE_TEXT_MAX		512
#define IMAGE_UPLOAD_CHUNK	(1024 * 1024)	/* pipe size; bytes a splice */
#define IMAGE_UPLOAD_STEPS	16		/* splices per wakeup */
#define IMAGE_UPLOAD_IDLE	60		/* s without a byte: abort */

/* What the directory says of one image. */
struct ws_image {
	char		 name[OBJ_NAME_MAX + 1];
	enum image_format format;
	uint64_t	 virtual_bytes;	/* 0 where only qemu-img knows */
	uint64_t	 disk_bytes;	/* allocated */
	char		 backing[OBJ_NAME_MAX + 1];	/* "" none */
	int		 backing_catalog;
	unsigned int	 users;		/* images backed by it */
};

struct ws_images {
	struct ws_image	 v[IMAGE_SCAN_MAX];
	unsigned int	 n;
	uint64_t	 usage;		/* what they count against quota */
};

struct catalog;
struct imsgev;
void	 images_init(int, struct catalog *, struct imsgev *);
void	 images_request(uint32_t, const struct msg_store_image *);
void	 images_cancel(uint32_t);
int	 images_scan(int, struct ws_images *, char *, size_t);
uint64_t images_usage(const struct ws_image *);
int	 images_ws_dir(uint64_t, char *, size_t);
int	 images_vm_check(uint64_t, int, const char *, int, char *, size_t);
int	 images_chain_json(const struct ws_images *, const struct ws_image *,
	    int, char *, size_t);

#endif
