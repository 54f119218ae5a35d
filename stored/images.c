/*
 * Workspace image stores.
 *
 * Each workspace's images live in <statedir>/workspaces/<ws id>/images/,
 * made by stored (0700, its user) when the workspace first makes one.
 * An image is one regular file NAME.FORMAT: the format comes from the
 * name stored gave the file, never from its contents, so a raw disk a
 * guest wrote cannot pass for a qcow2 with a backing file.  A qcow2
 * image's backing is recorded as "mcvm-image:NAME" (an image of the same
 * store) or "mcvm-catalog:NAME" (an operator's image), and never opened
 * by that name: every qemu-img that reads an image is given the whole
 * chain as a json: description stored builds from its own names, the
 * catalog base as an fd.  A qcow2 whose backing is anything else is
 * refused.  Files being made are ".new-NAME.FORMAT" and renamed into
 * place when done; leftovers of a crash are removed at start-up.
 *
 * Every operation is a request from mcvmd (IMSG_STORE_IMAGE), which
 * authorized it and says what the workspace's images may hold (budget,
 * max_images); stored checks the budget and the real free space before
 * anything is written.  Whatever qemu-img does runs as a job
 * (qemuimg.c): the event loop never waits on it, each workspace has at
 * most IMAGE_WS_JOBS_MAX at once, an image takes one operation at a
 * time, and mcvmd may cancel one (IMSG_STORE_CANCEL).
 *
 * An image is in use while another image's backing is it, or while a
 * VM's disks are it or overlays of it (vmdisks_in_use): then nothing
 * writes, resizes, snapshots, replaces or deletes it.
 */
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "disk.h"
#include "images.h"
#include "log.h"
#include "proc.h"
#include "qemuimg.h"
#include "stored.h"
#include "vmdisks.h"

#define IMAGE_WS_JOBS_MAX	2	/* qemu-img jobs of one workspace */
#define IMAGE_OVERHEAD(b)	((b) / 8 + (64ULL << 20)) /* metadata room */
#define IMAGE_FILE_MAX		(OBJ_NAME_MAX + 16)

struct img_op {
	LIST_ENTRY(img_op)	 entry;
	uint32_t		 id;
	uint32_t		 op;
	uint64_t		 ws;
	uint32_t		 flags;
	uint32_t		 format;
	uint64_t		 bytes;
	uint64_t		 budget;
	uint32_t		 max_images;
	char			 name[OBJ_NAME_MAX + 1];
	char			 dest[OBJ_NAME_MAX + 1];
	char			 base[OBJ_NAME_MAX + 1];
	char			 tag[OBJ_NAME_MAX + 1];
	char			 newfile[IMAGE_FILE_MAX];	/* to rename */
	char			 file[IMAGE_FILE_MAX];		/* its name */
	char			 oldfile[IMAGE_FILE_MAX];	/* replaced */
	int			 dfd;
	int			 step;		/* 0: info, 1: the change */
	struct qemuimg_job	*job;

	/* An upload: bytes come on pipe, go to file. */
	int			 pipe;
	int			 ufd;
	uint64_t		 got;
	struct event		 ev;		/* pipe readable */
	struct event		 idle;		/* no byte for a while */
	int			 evset;
};

static LIST_HEAD(, img_op)	 ops = LIST_HEAD_INITIALIZER(ops);
static struct imsgev		*parent;
static struct catalog		*cat;
static int			 wsroot = -1;

static void
send_entry(uint32_t id, const struct ws_image *img, int catalog,
    unsigned int nsnap)
{
	struct msg_store_image_entry	 m;
	struct ibuf			*b;

	memset(&m, 0, sizeof(m));
	m.name = img->name;
	m.format = img->format;
	m.catalog = catalog;
	m.virtual_bytes = img->virtual_bytes;
	m.disk_bytes = img->disk_bytes;
	m.backing = img->backing;
	m.backing_catalog = img->backing_catalog;
	m.users = img->users;
	m.snapshots = nsnap;
	if ((b = imsg_create(&parent->ibuf, IMSG_STORE_IMAGE_ENTRY, id, 0,
	    256)) == NULL)
		fatal("%s", __func__);
	msg_store_image_entry_put(b, &m);
	if (imsgev_close(parent, b) == -1)
		fatal("%s", __func__);
}

static void
send_snap(uint32_t id, const char *tag, uint64_t vm_bytes, uint64_t date)
{
	struct msg_store_image_snap	 m = { tag, vm_bytes, date };
	struct ibuf			*b;

	if ((b = imsg_create(&parent->ibuf, IMSG_STORE_IMAGE_SNAP, id, 0,
	    128)) == NULL)
		fatal("%s", __func__);
	msg_store_image_snap_put(b, &m);
	if (imsgev_close(parent, b) == -1)
		fatal("%s", __func__);
}

static void
op_progress(uint32_t permille, void *arg)
{
	struct img_op			*o = arg;
	struct msg_store_progress	 m = { permille };
	struct ibuf			*b;

	if ((b = imsg_create(&parent->ibuf, IMSG_STORE_PROGRESS, o->id, 0,
	    8)) == NULL)
		fatal("%s", __func__);
	msg_store_progress_put(b, &m);
	if (imsgev_close(parent, b) == -1)
		fatal("%s", __func__);
}

/* The directory of workspace ws's images; made when make is set. */
static int
ws_dir(uint64_t ws, int make, char *text, size_t len)
{
	char	 sub[32];
	int	 wfd, dfd, rc;

	textf(sub, sizeof(sub), "%" PRIu64, ws);
	if (make && mkdirat(wsroot, sub, 0700) == -1 && errno != EEXIST)
		goto fail;
	if ((wfd = openat(wsroot, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		goto fail;
	if (make && mkdirat(wfd, WS_IMAGES_DIR, 0700) == -1 &&
	    errno != EEXIST) {
		rc = errno;
		close(wfd);
		errno = rc;
		goto fail;
	}
	dfd = openat(wfd, WS_IMAGES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	rc = errno;
	close(wfd);
	if (dfd != -1)
		return dfd;
	errno = rc;
fail:
	rc = errno;
	if (rc == ENOENT && !make)
		return -2;	/* no images yet */
	textf(text, len, "workspace %" PRIu64 "'s image store: %s", ws,
	    strerror(rc));
	errno = rc;
	return -1;
}

static void
image_file(char *buf, size_t len, const char *prefix, const char *name,
    enum image_format f)
{
	textf(buf, len, "%s%s.%s", prefix, name, image_format_name(f));
}

/* NAME.FORMAT: the image's name and format, or -1. */
static int
split_file(const char *file, char *name, enum image_format *f)
{
	const char	*dot = strrchr(file, '.');
	int		 fmt;
	size_t		 n;

	if (dot == NULL || (fmt = image_format_parse(dot + 1)) == -1 ||
	    (n = (size_t)(dot - file)) > OBJ_NAME_MAX)
		return -1;
	memcpy(name, file, n);
	name[n] = '\0';
	if (!valid_object_name(name))
		return -1;
	*f = (enum image_format)fmt;
	return 0;
}

/* A qcow2's virtual size and backing, which must be one stored records. */
static int
image_qcow2(int dfd, const char *file, struct ws_image *img)
{
	char	 backing[QCOW2_BACKING_MAX + 1];
	size_t	 plen;
	int	 fd, rc;

	if ((fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno;
	rc = qcow2_header(fd, &img->virtual_bytes, backing, sizeof(backing));
	close(fd);
	if (rc != 0)
		return rc;
	if (backing[0] == '\0')
		return 0;
	if (strncmp(backing, IMAGE_BACKING_PREFIX,
	    (plen = strlen(IMAGE_BACKING_PREFIX))) == 0)
		img->backing_catalog = 0;
	else if (strncmp(backing, CATALOG_BACKING_PREFIX,
	    (plen = strlen(CATALOG_BACKING_PREFIX))) == 0)
		img->backing_catalog = 1;
	else
		return EINVAL;
	if (!valid_object_name(backing + plen))
		return EINVAL;
	textf(img->backing, sizeof(img->backing), "%s", backing + plen);
	return 0;
}

uint64_t
images_usage(const struct ws_image *img)
{
	return img->virtual_bytes > img->disk_bytes ? img->virtual_bytes :
	    img->disk_bytes;
}

/*
 * Reads a workspace's image directory into set: every NAME.FORMAT that
 * is a regular file (others are skipped, with a warning), and who backs
 * on whom.  0, or an errno value with text.
 */
int
images_scan(int dfd, struct ws_images *set, char *text, size_t len)
{
	struct ws_image	*img;
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	unsigned int	 i, j;
	int		 fd, rc;

	set->n = 0;
	set->usage = 0;
	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		rc = errno;
		if (fd != -1)
			close(fd);
		textf(text, len, "cannot read the image store: %s",
		    strerror(rc));
		return rc;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (set->n == IMAGE_SCAN_MAX) {
			log_warnx("image store: more than %d files",
			    IMAGE_SCAN_MAX);
			break;
		}
		img = &set->v[set->n];
		memset(img, 0, sizeof(*img));
		if (split_file(de->d_name, img->name, &img->format) == -1 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode)) {
			log_warnx("image store: %s is not an image",
			    de->d_name);
			continue;
		}
		img->disk_bytes = (uint64_t)st.st_blocks * 512;
		if (img->format == IMG_RAW || img->format == IMG_ISO)
			img->virtual_bytes = (uint64_t)st.st_size;
		else if (img->format == IMG_QCOW2 &&
		    (rc = image_qcow2(dfd, de->d_name, img)) != 0) {
			log_warnx("image store: %s: %s", de->d_name,
			    rc == EINVAL ? "not a qcow2 image stored made" :
			    strerror(rc));
			continue;
		}
		set->usage += images_usage(img);
		set->n++;
	}
	closedir(d);
	for (i = 0; i < set->n; i++)
		for (j = 0; j < set->n; j++)
			if (i != j && set->v[j].backing[0] != '\0' &&
			    !set->v[j].backing_catalog &&
			    strcmp(set->v[j].backing, set->v[i].name) == 0)
				set->v[i].users++;
	return 0;
}

static struct ws_image *
images_find(struct ws_images *set, const char *name)
{
	unsigned int	 i;

	for (i = 0; i < set->n; i++)
		if (strcmp(set->v[i].name, name) == 0)
			return &set->v[i];
	return NULL;
}

/*
 * The json: description qemu-img opens img by: its driver and file, and
 * below it its whole chain (with_backing) or none.  A catalog base is
 * QEMUIMG_XFD.  0, or -1 if the chain is broken or too long.
 */
int
images_chain_json(const struct ws_images *set, const struct ws_image *img,
    int with_backing, char *buf, size_t len)
{
	const struct ws_image	*cur = img;
	char			 file[IMAGE_FILE_MAX];
	size_t			 used;
	int			 depth = 0, n;

	used = (size_t)snprintf(buf, len, "json:");
	for (;;) {
		image_file(file, sizeof(file), "", cur->name, cur->format);
		n = snprintf(buf + used, len - used, "{\"driver\":\"%s\","
		    "\"file\":{\"driver\":\"file\",\"filename\":\"%s\"}",
		    image_format_driver(cur->format), file);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
		if (cur->format != IMG_QCOW2)
			break;
		if (!with_backing || cur->backing[0] == '\0') {
			n = snprintf(buf + used, len - used, ",\"backing\":"
			    "null");
			if (n < 0 || (size_t)n >= len - used)
				return -1;
			used += (size_t)n;
			break;
		}
		if (++depth > IMAGE_CHAIN_MAX)
			return -1;
		if (cur->backing_catalog) {
			/* Its object is closed with the others. */
			n = snprintf(buf + used, len - used, ",\"backing\":{"
			    "\"driver\":\"raw\",\"file\":{\"driver\":\"file\","
			    "\"filename\":\"%s\"}", QEMUIMG_XFD_PATH);
			if (n < 0 || (size_t)n >= len - used)
				return -1;
			used += (size_t)n;
			break;
		}
		n = snprintf(buf + used, len - used, ",\"backing\":");
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
		if ((cur = images_find((struct ws_images *)set,
		    cur->backing)) == NULL)
			return -1;
	}
	/* Close every object opened. */
	for (n = 0; n <= depth; n++) {
		if (used + 2 > len)
			return -1;
		buf[used++] = '}';
	}
	buf[used] = '\0';
	return 0;
}

/* The catalog image at the bottom of img's chain, or NULL. */
static struct catalog_image *
chain_catalog(struct ws_images *set, const struct ws_image *img)
{
	int	 depth;

	for (depth = 0; img != NULL && depth <= IMAGE_CHAIN_MAX; depth++) {
		if (img->backing[0] == '\0')
			return NULL;
		if (img->backing_catalog)
			return imgcat_lookup(cat, img->backing);
		img = images_find(set, img->backing);
	}
	return NULL;
}

/* --- requests ------------------------------------------------------------ */

/* Whether an operation of workspace ws but self (or NULL) uses name. */
static int
op_busy(uint64_t ws, const struct img_op *self, const char *name)
{
	struct img_op	*o;

	LIST_FOREACH(o, &ops, entry)
		if (o != self && o->ws == ws &&
		    (strcmp(o->name, name) == 0 ||
		    strcmp(o->dest, name) == 0 || (o->base[0] != '\0' &&
		    strcmp(o->base, name) == 0)))
			return 1;
	return 0;
}

static unsigned int
op_count(uint64_t ws)
{
	struct img_op	*o;
	unsigned int	 n = 0;

	LIST_FOREACH(o, &ops, entry)
		if (o->ws == ws)
			n++;
	return n;
}

static void
op_free(struct img_op *o)
{
	LIST_REMOVE(o, entry);
	if (o->evset) {
		event_del(&o->ev);
		evtimer_del(&o->idle);
	}
	if (o->pipe != -1)
		close(o->pipe);
	if (o->ufd != -1)
		close(o->ufd);
	if (o->newfile[0] != '\0')
		(void)unlinkat(o->dfd, o->newfile, 0);
	if (o->dfd >= 0)
		close(o->dfd);
	free(o);
}

/* Ends o with a result, usage being what the store holds after it. */
static void
op_finish(struct img_op *o, int status, uint64_t usage, const char *text)
{
	stored_result(o->id, status, DISK_RAW, usage, text);
	op_free(o);
}

/* The same, the store read again for its usage. */
static void
op_end(struct img_op *o, int status, const char *text)
{
	struct ws_images	*set;
	char			 why[IMAGE_TEXT_MAX];
	uint64_t		 usage = 0;

	if ((set = malloc(sizeof(*set))) != NULL) {
		if (images_scan(o->dfd, set, why, sizeof(why)) == 0)
			usage = set->usage;
		free(set);
	}
	op_finish(o, status, usage, text);
}

static int
free_space(int dfd, uint64_t need, char *text, size_t len)
{
	struct statvfs	 sv;
	uint64_t	 avail;

	if (fstatvfs(dfd, &sv) == -1) {
		textf(text, len, "statvfs: %s", strerror(errno));
		return EIO;
	}
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail < need + IMAGE_FREE_RESERVE) {
		textf(text, len, "the host's image store has %" PRIu64
		    " MiB free, not enough to write %" PRIu64 " MiB; try "
		    "later or free space", avail >> 20, need >> 20);
		return ENOSPC;
	}
	return 0;
}

static int
quota(const struct img_op *o, const struct ws_images *set, uint64_t add,
    uint64_t sub, char *text, size_t len)
{
	uint64_t	 after = set->usage - (sub < set->usage ? sub :
			    set->usage) + add;

	if (add > o->budget || after > o->budget) {
		textf(text, len, "the workspace's images would hold %" PRIu64
		    " MiB, over what its storage quota leaves them (%" PRIu64
		    " MiB): delete images or VMs first", after >> 20,
		    o->budget >> 20);
		return EDQUOT;
	}
	return 0;
}

static void	 op_job_done(const struct qemuimg_result *, void *);
static int	 upload_check(struct img_op *, const char *, char *, size_t);

static int
op_start(struct img_op *o, struct qemuimg_spec *spec, char *text, size_t len)
{
	spec->dirfd = o->dfd;
	return qemuimg_start(spec, op_job_done, (spec->flags &
	    QEMUIMG_PROGRESS) ? op_progress : NULL, o, &o->job, text, len);
}

/* Starts qemu-img info on the image (its chain not opened). */
static int
op_info(struct img_op *o, struct ws_images *set, struct ws_image *img,
    char *text, size_t len)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "info", "--output=json", NULL, NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS, .fsize_max = 1,
		.flags = QEMUIMG_STDOUT,
	};
	char			 json[QEMUIMG_ARG_MAX];

	if (images_chain_json(set, img, 0, json, sizeof(json)) == -1) {
		textf(text, len, "image %s's backing chain is broken",
		    img->name);
		return EIO;
	}
	spec.argv[3] = json;
	return op_start(o, &spec, text, len);
}

/* What qemu-img info said: the sizes and snapshots of one image. */
struct img_info {
	uint64_t	 virtual_bytes;
	uint64_t	 disk_bytes;
	unsigned int	 nsnap;
	int		 has_tag;	/* o->tag is one of them */
};

static int
info_parse(const struct img_op *o, const char *out, struct img_info *info,
    int send, char *text, size_t len)
{
	json_error_t	 err;
	json_t		*j, *snaps, *s, *v;
	size_t		 i;

	memset(info, 0, sizeof(*info));
	if ((j = json_loads(out, JSON_REJECT_DUPLICATES, &err)) == NULL ||
	    !json_is_object(j) ||
	    !json_is_integer(v = json_object_get(j, "virtual-size")) ||
	    json_integer_value(v) < 0) {
		json_decref(j);
		textf(text, len, "qemu-img info gave no image size");
		return EIO;
	}
	info->virtual_bytes = (uint64_t)json_integer_value(v);
	if (json_is_integer(v = json_object_get(j, "actual-size")) &&
	    json_integer_value(v) >= 0)
		info->disk_bytes = (uint64_t)json_integer_value(v);
	snaps = json_object_get(j, "snapshots");
	json_array_foreach(snaps, i, s) {
		const char	*tag = json_string_value(json_object_get(s,
				    "name"));
		json_int_t	 vm = json_integer_value(json_object_get(s,
				    "vm-state-size"));
		json_int_t	 date = json_integer_value(json_object_get(s,
				    "date-sec"));

		info->nsnap++;
		/* Only tags stored could have made are shown. */
		if (tag == NULL || !valid_object_name(tag))
			continue;
		if (strcmp(tag, o->tag) == 0)
			info->has_tag = 1;
		if (send)
			send_snap(o->id, tag, vm > 0 ? (uint64_t)vm : 0,
			    date > 0 ? (uint64_t)date : 0);
	}
	json_decref(j);
	return 0;
}

/* The change a snapshot request makes, once info has checked the tag. */
static int
op_snapshot(struct img_op *o, struct ws_images *set, struct ws_image *img,
    const struct img_info *info, char *text, size_t len)
{
	static const char *const flag[] = {
		[SIO_SNAP_CREATE] = "-c", [SIO_SNAP_APPLY] = "-a",
		[SIO_SNAP_DELETE] = "-d",
	};
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "snapshot", "-q", NULL, o->tag, NULL,
		    NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
		.fsize_max = IMAGE_OVERHEAD(img->virtual_bytes) +
		    img->disk_bytes,
	};
	char			 json[QEMUIMG_ARG_MAX];

	if (o->op == SIO_SNAP_CREATE && info->has_tag) {
		textf(text, len, "image %s already has a snapshot %s: "
		    "choose another tag, or image_snapshot_delete it first",
		    o->name, o->tag);
		return EEXIST;
	}
	if (o->op == SIO_SNAP_CREATE && info->nsnap >= IMAGE_SNAPSHOTS_MAX) {
		textf(text, len, "image %s has %u snapshots, the most it may "
		    "have: delete one first", o->name, info->nsnap);
		return EDQUOT;
	}
	if (o->op != SIO_SNAP_CREATE && !info->has_tag) {
		textf(text, len, "image %s has no snapshot %s (see "
		    "image_snapshot_list); nothing was changed", o->name,
		    o->tag);
		return ENOENT;
	}
	if (images_chain_json(set, img, 0, json, sizeof(json)) == -1) {
		textf(text, len, "image %s's backing chain is broken",
		    img->name);
		return EIO;
	}
	spec.argv[3] = flag[o->op];
	spec.argv[5] = json;
	o->step = 1;
	return op_start(o, &spec, text, len);
}

/* The new file is done: it takes the image's name. */
static int
op_commit(struct img_op *o, char *text, size_t len)
{
	if (renameat(o->dfd, o->newfile, o->dfd, o->file) == -1) {
		textf(text, len, "rename: %s", strerror(errno));
		return EIO;
	}
	o->newfile[0] = '\0';
	if (o->oldfile[0] != '\0' && strcmp(o->oldfile, o->file) != 0 &&
	    unlinkat(o->dfd, o->oldfile, 0) == -1 && errno != ENOENT)
		log_warn("image store: cannot remove the replaced %s",
		    o->oldfile);
	if (fsync(o->dfd) == -1)
		log_warn("image store: fsync");
	return 0;
}

/* Reports the image the request named (or made) and ends it. */
static void
op_report(struct img_op *o, const char *name, const struct img_info *info,
    const char *text)
{
	struct ws_images	*set;
	struct ws_image		*img, *cur;
	char			 why[IMAGE_TEXT_MAX];
	uint64_t		 usage;
	int			 depth;

	if ((set = malloc(sizeof(*set))) == NULL) {
		op_end(o, ENOMEM, "out of memory");
		return;
	}
	if (images_scan(o->dfd, set, why, sizeof(why)) != 0 ||
	    (img = images_find(set, name)) == NULL) {
		free(set);
		op_end(o, EIO, "the image vanished from the store");
		return;
	}
	/* Only qemu-img knows the size of the other formats. */
	if (img->virtual_bytes == 0 && o->op == SIO_CONVERT)
		img->virtual_bytes = o->bytes;
	if (info != NULL) {
		img->virtual_bytes = info->virtual_bytes;
		if (info->disk_bytes != 0)
			img->disk_bytes = info->disk_bytes;
	}
	send_entry(o->id, img, 0, info != NULL ? info->nsnap : 0);
	/* The chain below it, top first, down to a catalog base. */
	for (cur = img, depth = 0; (o->flags & SIF_CHAIN) &&
	    cur->backing[0] != '\0' && depth < IMAGE_CHAIN_MAX; depth++) {
		if (cur->backing_catalog) {
			struct catalog_image	*ci = imgcat_lookup(cat,
						    cur->backing);
			struct ws_image		 base;

			memset(&base, 0, sizeof(base));
			textf(base.name, sizeof(base.name), "%s",
			    cur->backing);
			base.format = IMG_RAW;
			base.virtual_bytes = base.disk_bytes = ci != NULL ?
			    ci->disk_bytes : 0;
			send_entry(o->id, &base, 1, 0);
			break;
		}
		if ((cur = images_find(set, cur->backing)) == NULL)
			break;
		send_entry(o->id, cur, 0, 0);
	}
	usage = set->usage;
	free(set);
	op_finish(o, 0, usage, text);
}

static void
op_job_done(const struct qemuimg_result *res, void *arg)
{
	struct img_op		*o = arg;
	struct ws_images	*set = NULL;
	struct ws_image		*img;
	struct img_info		 info;
	char			 text[IMAGE_TEXT_MAX];
	int			 rc;

	o->job = NULL;
	if (res->status != 0) {
		textf(text, sizeof(text), "%s", res->text);
		op_end(o, res->status == ETIMEDOUT || res->status == EFBIG ||
		    res->status == ECANCELED ? res->status : EIO, text);
		return;
	}
	switch (o->op) {
	case SIO_UPLOAD:
		if ((rc = upload_check(o, res->out, text,
		    sizeof(text))) != 0 || (rc = op_commit(o, text,
		    sizeof(text))) != 0) {
			op_end(o, rc, text);
			return;
		}
		textf(text, sizeof(text), "image %s uploaded (%" PRIu64
		    " bytes)", o->name, o->got);
		log_info("workspace %" PRIu64 ": %s", o->ws, text);
		op_report(o, o->name, NULL, text);
		return;
	case SIO_CREATE:
	case SIO_CONVERT:
		if ((rc = op_commit(o, text, sizeof(text))) != 0) {
			op_end(o, rc, text);
			return;
		}
		textf(text, sizeof(text), "image %s %s", o->op == SIO_CREATE ?
		    o->name : o->dest, o->op == SIO_CREATE ? "created" :
		    "converted");
		log_info("workspace %" PRIu64 ": %s", o->ws, text);
		op_report(o, o->op == SIO_CREATE ? o->name : o->dest, NULL,
		    text);
		return;
	case SIO_RESIZE:
		textf(text, sizeof(text), "image %s resized", o->name);
		op_report(o, o->name, NULL, text);
		return;
	case SIO_INFO:
		if ((rc = info_parse(o, res->out, &info, 1, text,
		    sizeof(text))) != 0) {
			op_end(o, rc, text);
			return;
		}
		op_report(o, o->name, &info, "");
		return;
	case SIO_SNAP_LIST:
		if ((rc = info_parse(o, res->out, &info, 1, text,
		    sizeof(text))) != 0) {
			op_end(o, rc, text);
			return;
		}
		textf(text, sizeof(text), "%u snapshot%s", info.nsnap,
		    info.nsnap == 1 ? "" : "s");
		op_end(o, 0, text);
		return;
	default:
		break;
	}
	/* A snapshot change: info first, then the change. */
	if (o->step == 1) {
		textf(text, sizeof(text), "snapshot %s of image %s %s", o->tag,
		    o->name, o->op == SIO_SNAP_CREATE ? "created" :
		    o->op == SIO_SNAP_APPLY ? "applied" : "deleted");
		log_info("workspace %" PRIu64 ": %s", o->ws, text);
		op_end(o, 0, text);
		return;
	}
	if ((rc = info_parse(o, res->out, &info, 0, text,
	    sizeof(text))) == 0) {
		if ((set = malloc(sizeof(*set))) == NULL)
			rc = ENOMEM;
		else if ((rc = images_scan(o->dfd, set, text,
		    sizeof(text))) == 0) {
			if ((img = images_find(set, o->name)) == NULL) {
				rc = ENOENT;
				textf(text, sizeof(text), "image %s vanished",
				    o->name);
			} else
				rc = op_snapshot(o, set, img, &info, text,
				    sizeof(text));
		}
		free(set);
	}
	if (rc != 0)
		op_end(o, rc, text);
}

static int
check_new_name(struct img_op *o, struct ws_images *set, const char *name,
    struct ws_image **old, char *text, size_t len)
{
	if (imgcat_lookup(cat, name) != NULL) {
		textf(text, len, "%s is the name of a catalog image: choose "
		    "another", name);
		return EEXIST;
	}
	*old = images_find(set, name);
	if (*old == NULL) {
		if (set->n >= o->max_images) {
			textf(text, len, "the workspace has %u images, its "
			    "limit: delete one first", set->n);
			return EDQUOT;
		}
		return 0;
	}
	if (!(o->flags & SIF_OVERWRITE)) {
		textf(text, len, "image %s exists: pass overwrite=true to "
		    "replace it, or choose another name", name);
		return EEXIST;
	}
	if ((*old)->users > 0) {
		textf(text, len, "image %s is the backing of %u image%s and "
		    "cannot be replaced", name, (*old)->users,
		    (*old)->users == 1 ? "" : "s");
		return EBUSY;
	}
	if (vmdisks_in_use(o->ws, name)) {
		textf(text, len, "image %s is a VM's disk, or the base of "
		    "one, and cannot be replaced while that VM exists", name);
		return EBUSY;
	}
	image_file(o->oldfile, sizeof(o->oldfile), "", name, (*old)->format);
	return 0;
}

static int
req_create(struct img_op *o, struct ws_images *set, char *text, size_t len)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-q", "-f", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
	};
	struct ws_image		*old, *base = NULL, *cur;
	struct catalog_image	*ci = NULL;
	char			 backing[sizeof(IMAGE_BACKING_PREFIX) +
				    sizeof(CATALOG_BACKING_PREFIX) +
				    OBJ_NAME_MAX], size[32];
	const char		*bfmt = NULL;
	uint64_t		 bytes = o->bytes;
	int			 rc, i = 4, depth;

	if (o->format != IMG_QCOW2 && o->format != IMG_RAW) {
		textf(text, len, "image_create makes qcow2 or raw images; "
		    "image_convert makes the other formats");
		return EINVAL;
	}
	if ((rc = check_new_name(o, set, o->name, &old, text, len)) != 0)
		return rc;
	if (o->base[0] != '\0') {
		if (o->format != IMG_QCOW2) {
			textf(text, len, "only a qcow2 image can have a "
			    "backing image: use format qcow2");
			return EINVAL;
		}
		if (o->flags & SIF_BASE_CATALOG) {
			if ((ci = imgcat_lookup(cat, o->base)) == NULL) {
				textf(text, len, "no catalog image %s",
				    o->base);
				return ENOENT;
			}
			if ((rc = imgcat_image_usable(ci, text, len)) != 0)
				return rc;
			if (bytes == 0)
				bytes = ci->disk_bytes;
			textf(backing, sizeof(backing), "%s%s",
			    CATALOG_BACKING_PREFIX, o->base);
			bfmt = "raw";
		} else {
			if ((base = images_find(set, o->base)) == NULL) {
				textf(text, len, "no image %s in your "
				    "workspace (see image_list)", o->base);
				return ENOENT;
			}
			/* No cycle, and no chain too long. */
			for (cur = base, depth = 1; cur != NULL &&
			    cur->backing[0] != '\0' && !cur->backing_catalog;
			    depth++) {
				if (strcmp(cur->backing, o->name) == 0 ||
				    depth >= IMAGE_CHAIN_MAX) {
					textf(text, len, "image %s cannot "
					    "back %s: the chain would loop or "
					    "pass %d images", o->base, o->name,
					    IMAGE_CHAIN_MAX);
					return EINVAL;
				}
				cur = images_find(set, cur->backing);
			}
			if (strcmp(o->base, o->name) == 0) {
				textf(text, len, "an image cannot be its own "
				    "backing");
				return EINVAL;
			}
			if (base->format != IMG_QCOW2 &&
			    base->format != IMG_RAW) {
				textf(text, len, "a backing image must be "
				    "qcow2 or raw; image_convert %s first",
				    o->base);
				return EINVAL;
			}
			if (bytes == 0)
				bytes = base->virtual_bytes;
			textf(backing, sizeof(backing), "%s%s",
			    IMAGE_BACKING_PREFIX, o->base);
			bfmt = image_format_name(base->format);
		}
	}
	if (bytes == 0) {
		textf(text, len, "size is required without a backing image, "
		    "like \"20G\"");
		return EINVAL;
	}
	if (bytes > IMAGE_SIZE_MAX) {
		textf(text, len, "size is over the largest image, %" PRIu64
		    " TiB", (uint64_t)(IMAGE_SIZE_MAX >> 40));
		return EINVAL;
	}
	if ((rc = quota(o, set, bytes, old != NULL ? images_usage(old) : 0,
	    text, len)) != 0 || (rc = free_space(o->dfd, IMAGE_OVERHEAD(0),
	    text, len)) != 0)
		return rc;
	image_file(o->file, sizeof(o->file), "", o->name,
	    (enum image_format)o->format);
	image_file(o->newfile, sizeof(o->newfile), IMAGE_NEW_PREFIX, o->name,
	    (enum image_format)o->format);
	(void)unlinkat(o->dfd, o->newfile, 0);
	textf(size, sizeof(size), "%" PRIu64, bytes);
	spec.argv[i++] = image_format_name((enum image_format)o->format);
	if (bfmt != NULL) {
		spec.argv[i++] = "-F";
		spec.argv[i++] = bfmt;
		spec.argv[i++] = "-b";
		spec.argv[i++] = backing;
		spec.argv[i++] = "-u";
	}
	spec.argv[i++] = o->newfile;
	spec.argv[i++] = size;
	spec.argv[i] = NULL;
	/* A raw image is sparse; a qcow2's metadata is small. */
	spec.fsize_max = o->format == IMG_RAW ? bytes + 1 :
	    IMAGE_OVERHEAD(0);
	return op_start(o, &spec, text, len);
}

static int
req_convert(struct img_op *o, struct ws_images *set, char *text, size_t len)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "convert", "-p", "-O", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_LONG_MS,
		.flags = QEMUIMG_PROGRESS,
	};
	struct ws_image		*src, *old, cimg;
	struct catalog_image	*ci = NULL;
	char			 json[QEMUIMG_ARG_MAX];
	int			 rc, i = 4;

	if (o->dest[0] == '\0' || strcmp(o->dest, o->name) == 0) {
		textf(text, len, "dest must name a new image, not the "
		    "source");
		return EINVAL;
	}
	if ((o->flags & SIF_COMPRESS) && o->format != IMG_QCOW2) {
		textf(text, len, "compress works with format qcow2 only");
		return EINVAL;
	}
	if ((src = images_find(set, o->name)) == NULL) {
		/* A catalog image converts into the workspace. */
		if ((ci = imgcat_lookup(cat, o->name)) == NULL) {
			textf(text, len, "no image %s (see image_list)",
			    o->name);
			return ENOENT;
		}
		if ((rc = imgcat_image_usable(ci, text, len)) != 0)
			return rc;
		memset(&cimg, 0, sizeof(cimg));
		textf(cimg.name, sizeof(cimg.name), "%s", o->name);
		cimg.format = IMG_RAW;
		cimg.virtual_bytes = ci->disk_bytes;
		src = &cimg;
		textf(json, sizeof(json), "json:{\"driver\":\"raw\",\"file\":"
		    "{\"driver\":\"file\",\"filename\":\"%s\"}}",
		    QEMUIMG_XFD_PATH);
	} else {
		if ((ci = chain_catalog(set, src)) == NULL &&
		    src->backing_catalog) {
			textf(text, len, "image %s's catalog base is gone",
			    o->name);
			return ENOENT;
		}
		if (images_chain_json(set, src, 1, json, sizeof(json)) ==
		    -1) {
			textf(text, len, "image %s's backing chain is broken",
			    o->name);
			return EIO;
		}
	}
	if ((rc = check_new_name(o, set, o->dest, &old, text, len)) != 0)
		return rc;
	if (src->virtual_bytes == 0) {
		textf(text, len, "image %s's size is unknown: image_info it "
		    "first", o->name);
		return EIO;
	}
	if ((rc = quota(o, set, src->virtual_bytes, old != NULL ?
	    images_usage(old) : 0, text, len)) != 0 ||
	    (rc = free_space(o->dfd, src->virtual_bytes +
	    IMAGE_OVERHEAD(src->virtual_bytes), text, len)) != 0)
		return rc;
	if (ci != NULL) {
		if ((spec.xfd = ci->files[CAT_DISK].fd) == -1) {
			textf(text, len, "catalog image %s has no disk",
			    ci->conf->name);
			return ENOENT;
		}
	}
	image_file(o->file, sizeof(o->file), "", o->dest,
	    (enum image_format)o->format);
	image_file(o->newfile, sizeof(o->newfile), IMAGE_NEW_PREFIX, o->dest,
	    (enum image_format)o->format);
	(void)unlinkat(o->dfd, o->newfile, 0);
	spec.argv[i++] = image_format_name((enum image_format)o->format);
	if (o->flags & SIF_COMPRESS)
		spec.argv[i++] = "-c";
	spec.argv[i++] = json;
	spec.argv[i++] = o->newfile;
	spec.argv[i] = NULL;
	spec.fsize_max = src->virtual_bytes +
	    IMAGE_OVERHEAD(src->virtual_bytes);
	o->bytes = src->virtual_bytes;
	return op_start(o, &spec, text, len);
}

/* The image a change names: one of the workspace's, not in use. */
static int
writable(struct img_op *o, struct ws_images *set, struct ws_image **imgp,
    char *text, size_t len)
{
	if ((*imgp = images_find(set, o->name)) == NULL) {
		if (imgcat_lookup(cat, o->name) != NULL)
			textf(text, len, "%s is a catalog image, which is "
			    "read-only: image_convert it into an image of "
			    "your own", o->name);
		else
			textf(text, len, "no image %s in your workspace (see "
			    "image_list)", o->name);
		return imgcat_lookup(cat, o->name) != NULL ? EROFS : ENOENT;
	}
	if ((*imgp)->users > 0) {
		textf(text, len, "image %s is the backing of %u image%s: it "
		    "cannot change while they exist", o->name,
		    (*imgp)->users, (*imgp)->users == 1 ? "" : "s");
		return EBUSY;
	}
	if (vmdisks_in_use(o->ws, o->name)) {
		textf(text, len, "image %s is in use by a VM (its disk, or "
		    "the base of its disk): it cannot change while that VM "
		    "exists; vm_destroy it first", o->name);
		return EBUSY;
	}
	return 0;
}

static int
req_resize(struct img_op *o, struct ws_images *set, char *text, size_t len)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "resize", "-q", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
	};
	struct ws_image		*img;
	char			 json[QEMUIMG_ARG_MAX], size[32];
	uint64_t		 bytes;
	int			 rc, i = 3;

	if ((rc = writable(o, set, &img, text, len)) != 0)
		return rc;
	if (img->format != IMG_QCOW2 && img->format != IMG_RAW) {
		textf(text, len, "only qcow2 and raw images resize: "
		    "image_convert %s first", o->name);
		return EINVAL;
	}
	bytes = (o->flags & SIF_GROW) ? img->virtual_bytes + o->bytes :
	    o->bytes;
	if (bytes == 0 || bytes > IMAGE_SIZE_MAX || bytes < o->bytes) {
		textf(text, len, "the new size must be 1 byte to %" PRIu64
		    " TiB", (uint64_t)(IMAGE_SIZE_MAX >> 40));
		return EINVAL;
	}
	if (bytes < img->virtual_bytes && !(o->flags & SIF_SHRINK)) {
		textf(text, len, "%" PRIu64 " bytes is smaller than image "
		    "%s (%" PRIu64 " bytes): shrinking destroys the data "
		    "past the new end; pass shrink=true if that is meant",
		    bytes, o->name, img->virtual_bytes);
		return EINVAL;
	}
	if (bytes == img->virtual_bytes) {
		textf(text, len, "image %s is %" PRIu64 " bytes already",
		    o->name, bytes);
		return EINVAL;
	}
	if ((rc = quota(o, set, bytes, images_usage(img), text, len)) != 0 ||
	    (rc = free_space(o->dfd, IMAGE_OVERHEAD(0), text, len)) != 0)
		return rc;
	if (images_chain_json(set, img, 0, json, sizeof(json)) == -1) {
		textf(text, len, "image %s's backing chain is broken",
		    o->name);
		return EIO;
	}
	if (bytes < img->virtual_bytes)
		spec.argv[i++] = "--shrink";
	textf(size, sizeof(size), "%" PRIu64, bytes);
	spec.argv[i++] = json;
	spec.argv[i++] = size;
	spec.argv[i] = NULL;
	spec.fsize_max = (img->format == IMG_RAW ? bytes : img->disk_bytes) +
	    IMAGE_OVERHEAD(bytes);
	return op_start(o, &spec, text, len);
}

static int
req_delete(struct img_op *o, struct ws_images *set, char *text, size_t len)
{
	struct ws_image	*img;
	char		 file[IMAGE_FILE_MAX];
	int		 rc;

	if ((rc = writable(o, set, &img, text, len)) != 0)
		return rc;
	image_file(file, sizeof(file), "", img->name, img->format);
	if (unlinkat(o->dfd, file, 0) == -1) {
		rc = errno;
		textf(text, len, "cannot delete image %s: %s", o->name,
		    strerror(rc));
		return rc;
	}
	(void)fsync(o->dfd);
	log_info("workspace %" PRIu64 ": image %s deleted", o->ws, o->name);
	textf(text, len, "image %s deleted", o->name);
	return -1;	/* done, no job */
}

/*
 * What an uploaded file is, from its first bytes: the format it is kept
 * as, or -1 with why in text.  A qcow2 must stand alone: no backing
 * file, no external data file.
 */
static int
upload_probe(int fd, char *text, size_t len)
{
	uint8_t		 h[104], cd[5];
	uint64_t	 size;
	char		 backing[QCOW2_BACKING_MAX + 1];
	ssize_t		 n;
	int		 rc;

	memset(h, 0, sizeof(h));
	if ((n = pread(fd, h, sizeof(h), 0)) == -1) {
		textf(text, len, "read: %s", strerror(errno));
		return -1;
	}
	if (n >= 4 && memcmp(h, "QFI\xfb", 4) == 0) {
		rc = qcow2_header(fd, &size, backing, sizeof(backing));
		if (rc == 0 && backing[0] != '\0')
			rc = EEXIST;
		/* Version 3: incompatible feature bit 2, an external data
		 * file. */
		if (rc == 0 && h[7] == 3 && n >= 80 && (h[79] & 0x04))
			rc = EEXIST;
		if (rc != 0) {
			textf(text, len, "%s", rc == EEXIST ? "the qcow2 "
			    "image refers to another file (a backing or data "
			    "file): upload a standalone image (qemu-img "
			    "convert -O qcow2 flattens it)" : "not a qcow2 "
			    "image qemu-img can read (version 2 or 3)");
			return -1;
		}
		return IMG_QCOW2;
	}
	if (n >= 4 && memcmp(h, "KDMV", 4) == 0) {
		textf(text, len, "vmdk images may name other files: convert "
		    "it to qcow2 (qemu-img convert -O qcow2) and upload that");
		return -1;
	}
	if (n >= 8 && memcmp(h, "vhdxfile", 8) == 0)
		return IMG_VHDX;
	if (n >= 0x44 && h[0x40] == 0x7f && h[0x41] == 0x10 &&
	    h[0x42] == 0xda && h[0x43] == 0xbe)
		return IMG_VDI;
	if (pread(fd, cd, sizeof(cd), 0x8001) == (ssize_t)sizeof(cd) &&
	    memcmp(cd, "CD001", 5) == 0)
		return IMG_ISO;
	return IMG_RAW;
}

/* qemu-img info's word on the new file: it must open alone. */
static int
upload_check(struct img_op *o, const char *out, char *text, size_t len)
{
	struct img_info	 info;
	json_t		*j;
	int		 rc;

	if ((rc = info_parse(o, out, &info, 0, text, len)) != 0)
		return rc;
	if ((j = json_loads(out, 0, NULL)) == NULL)
		return EIO;
	rc = json_object_get(j, "backing-filename") != NULL ||
	    json_object_get(j, "full-backing-filename") != NULL;
	json_decref(j);
	if (rc) {
		textf(text, len, "the image refers to a backing file: upload "
		    "a standalone image");
		return EINVAL;
	}
	return 0;
}

static void	 upload_pump(int, short, void *);

/* The upload's bytes are all in: what are they? */
static void
upload_done(struct img_op *o)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "info", "--output=json", NULL, NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS, .fsize_max = 1,
		.flags = QEMUIMG_STDOUT,
	};
	char			 text[IMAGE_TEXT_MAX], json[QEMUIMG_ARG_MAX];
	char			 file[IMAGE_FILE_MAX];
	int			 fmt, rc;

	event_del(&o->ev);
	evtimer_del(&o->idle);
	o->evset = 0;
	close(o->pipe);
	o->pipe = -1;
	if (fsync(o->ufd) == -1) {
		textf(text, sizeof(text), "fsync: %s", strerror(errno));
		op_end(o, EIO, text);
		return;
	}
	if ((fmt = upload_probe(o->ufd, text, sizeof(text))) == -1) {
		op_end(o, EINVAL, text);
		return;
	}
	close(o->ufd);
	o->ufd = -1;
	/* It is renamed for what it is, then opened by that driver only. */
	image_file(file, sizeof(file), IMAGE_NEW_PREFIX, o->name,
	    (enum image_format)fmt);
	if (renameat(o->dfd, o->newfile, o->dfd, file) == -1) {
		textf(text, sizeof(text), "rename: %s", strerror(errno));
		op_end(o, EIO, text);
		return;
	}
	textf(o->newfile, sizeof(o->newfile), "%s", file);
	image_file(o->file, sizeof(o->file), "", o->name,
	    (enum image_format)fmt);
	textf(json, sizeof(json), "json:{\"driver\":\"%s\",\"file\":{"
	    "\"driver\":\"file\",\"filename\":\"%s\"}%s}",
	    image_format_driver((enum image_format)fmt), file,
	    fmt == IMG_QCOW2 ? ",\"backing\":null" : "");
	spec.argv[3] = json;
	if ((rc = op_start(o, &spec, text, sizeof(text))) != 0)
		op_end(o, rc, text);
}

static void
upload_idle(int fd, short event, void *arg)
{
	struct img_op	*o = arg;
	char		 text[IMAGE_TEXT_MAX];

	textf(text, sizeof(text), "the upload stalled: no byte for %d s "
	    "after %" PRIu64 " of %" PRIu64, IMAGE_UPLOAD_IDLE, o->got,
	    o->bytes);
	op_end(o, ETIMEDOUT, text);
}

/* Moves what the pipe holds into the file, within the declared size. */
static void
upload_pump(int fd, short event, void *arg)
{
	struct img_op	*o = arg;
	struct timeval	 tv = { IMAGE_UPLOAD_IDLE, 0 };
	char		 text[IMAGE_TEXT_MAX];
	ssize_t		 n;
	int		 i;

	for (i = 0; i < IMAGE_UPLOAD_STEPS; i++) {
		n = splice(o->pipe, NULL, o->ufd, NULL, IMAGE_UPLOAD_CHUNK,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -1 && errno == EAGAIN)
			break;
		if (n == -1) {
			textf(text, sizeof(text), "writing the image: %s",
			    strerror(errno));
			op_end(o, errno == ENOSPC || errno == EFBIG ?
			    errno : EIO, text);
			return;
		}
		if (n == 0) {
			if (o->got != o->bytes) {
				textf(text, sizeof(text), "the upload ended "
				    "after %" PRIu64 " of %" PRIu64 " bytes; "
				    "nothing was kept", o->got, o->bytes);
				op_end(o, ECANCELED, text);
				return;
			}
			upload_done(o);
			return;
		}
		o->got += (uint64_t)n;
		if (o->got > o->bytes) {
			textf(text, sizeof(text), "more bytes came than the "
			    "%" PRIu64 " announced; nothing was kept",
			    o->bytes);
			op_end(o, EFBIG, text);
			return;
		}
	}
	evtimer_add(&o->idle, &tv);
}

/*
 * An upload: admitted against the quota and the free space before any
 * byte, then a pipe for frontd to fill (STORE_FD), whose bytes go to a
 * new file; the RESULT comes when they are all in and checked.
 */
static int
req_upload(struct img_op *o, struct ws_images *set, char *text, size_t len)
{
	struct ws_image	*old;
	struct timeval	 tv = { IMAGE_UPLOAD_IDLE, 0 };
	int		 p[2], rc;

	if ((rc = check_new_name(o, set, o->name, &old, text, len)) != 0)
		return rc;
	if (o->bytes == 0 || o->bytes > IMAGE_SIZE_MAX) {
		textf(text, len, "an upload is 1 byte to %" PRIu64 " TiB",
		    (uint64_t)(IMAGE_SIZE_MAX >> 40));
		return EINVAL;
	}
	if ((rc = quota(o, set, o->bytes, old != NULL ? images_usage(old) :
	    0, text, len)) != 0 || (rc = free_space(o->dfd, o->bytes, text,
	    len)) != 0)
		return rc;
	textf(o->newfile, sizeof(o->newfile), "%s%s.upload", IMAGE_NEW_PREFIX,
	    o->name);
	(void)unlinkat(o->dfd, o->newfile, 0);
	if ((o->ufd = openat(o->dfd, o->newfile, O_RDWR | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
		rc = errno;
		o->newfile[0] = '\0';
		textf(text, len, "cannot make the upload's file: %s",
		    strerror(rc));
		return rc;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1) {
		rc = errno;
		textf(text, len, "pipe: %s", strerror(rc));
		return rc;
	}
	(void)fcntl(p[0], F_SETPIPE_SZ, IMAGE_UPLOAD_CHUNK);
	o->pipe = p[0];
	event_set(&o->ev, o->pipe, EV_READ | EV_PERSIST, upload_pump, o);
	evtimer_set(&o->idle, upload_idle, o);
	event_add(&o->ev, NULL);
	evtimer_add(&o->idle, &tv);
	o->evset = 1;
	imsgev_send_fd(parent, IMSG_STORE_FD, o->id, STORE_FD_IMAGE, p[1]);
	return 0;
}

/* A download: the image's file, read-only, for frontd to send. */
static int
req_download(struct img_op *o, struct ws_images *set, char *text,
    size_t len)
{
	struct catalog_image	*ci;
	struct ws_image		*img = set != NULL ? images_find(set,
				    o->name) : NULL;
	char			 file[IMAGE_FILE_MAX];
	int			 fd;

	if (img == NULL) {
		if ((ci = imgcat_lookup(cat, o->name)) == NULL) {
			textf(text, len, "no image %s (see image_list)",
			    o->name);
			return ENOENT;
		}
		if (imgcat_image_usable(ci, text, len) != 0 ||
		    ci->files[CAT_DISK].fd == -1)
			return EAGAIN;
		if ((fd = fcntl(ci->files[CAT_DISK].fd, F_DUPFD_CLOEXEC,
		    0)) == -1) {
			textf(text, len, "dup: %s", strerror(errno));
			return EIO;
		}
		imsgev_send_fd(parent, IMSG_STORE_FD, o->id, STORE_FD_IMAGE,
		    fd);
		textf(text, len, "catalog image %s", o->name);
		return -1;
	}
	image_file(file, sizeof(file), "", img->name, img->format);
	if ((fd = openat(o->dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1) {
		textf(text, len, "cannot open image %s: %s", o->name,
		    strerror(errno));
		return EIO;
	}
	imsgev_send_fd(parent, IMSG_STORE_FD, o->id, STORE_FD_IMAGE, fd);
	send_entry(o->id, img, 0, 0);
	textf(text, len, "image %s", o->name);
	return -1;
}

static void
req_list(struct img_op *o, struct ws_images *set)
{
	struct ws_image	 img;
	unsigned int	 i;

	for (i = 0; i < set->n; i++) {
		img = set->v[i];
		if (vmdisks_in_use(o->ws, img.name))
			img.users++;	/* in use: by VMs too */
		send_entry(o->id, &img, 0, 0);
	}
}

/*
 * One IMSG_STORE_IMAGE from mcvmd.  Operations that need qemu-img answer
 * when it ends; the others at once.
 */
void
images_request(uint32_t id, const struct msg_store_image *m)
{
	struct img_op		*o;
	struct ws_images	*set = NULL;
	struct ws_image		*img;
	char			 text[IMAGE_TEXT_MAX];
	int			 rc = 0, make;

	if ((o = calloc(1, sizeof(*o))) == NULL) {
		stored_result(id, ENOMEM, DISK_RAW, 0, "out of memory");
		return;
	}
	o->id = id;
	o->op = m->op;
	o->ws = m->ws;
	o->flags = m->flags;
	o->format = m->format;
	o->bytes = m->bytes;
	o->budget = m->budget;
	o->max_images = m->max_images;
	textf(o->name, sizeof(o->name), "%s", m->name);
	textf(o->dest, sizeof(o->dest), "%s", m->dest);
	textf(o->base, sizeof(o->base), "%s", m->base);
	textf(o->tag, sizeof(o->tag), "%s", m->tag);
	o->dfd = o->pipe = o->ufd = -1;
	LIST_INSERT_HEAD(&ops, o, entry);

	make = m->op == SIO_CREATE || m->op == SIO_CONVERT ||
	    m->op == SIO_UPLOAD;
	if ((o->dfd = ws_dir(m->ws, make, text, sizeof(text))) < 0) {
		if (o->dfd == -2 && (m->op == SIO_LIST ||
		    imgcat_lookup(cat, m->name) == NULL)) {
			/* No store yet: nothing in it. */
			o->dfd = -1;
			if (m->op == SIO_LIST) {
				stored_result(id, 0, DISK_RAW, 0, "no images");
				LIST_REMOVE(o, entry);
				free(o);
				return;
			}
			textf(text, sizeof(text), "no image %s in your "
			    "workspace (see image_list)", m->name);
			rc = ENOENT;
		} else if (o->dfd == -2) {
			o->dfd = -1;
			textf(text, sizeof(text), "%s is a catalog image, "
			    "which is read-only: image_convert it into an "
			    "image of your own", m->name);
			/* Read, it is answered below. */
			rc = m->op == SIO_INFO || m->op == SIO_SNAP_LIST ||
			    m->op == SIO_DOWNLOAD ? 0 : EROFS;
		} else
			rc = errno != 0 ? errno : EIO;
		if (rc != 0) {
			stored_result(id, rc, DISK_RAW, 0, text);
			LIST_REMOVE(o, entry);
			free(o);
			return;
		}
	}
	if (o->dfd >= 0 && (set = malloc(sizeof(*set))) == NULL) {
		op_end(o, ENOMEM, "out of memory");
		return;
	}
	if (set != NULL && (rc = images_scan(o->dfd, set, text,
	    sizeof(text))) != 0) {
		free(set);
		op_end(o, rc, text);
		return;
	}
	/* One operation at a time on an image, and a few per workspace. */
	if (m->op != SIO_LIST && m->op != SIO_INFO &&
	    m->op != SIO_SNAP_LIST && m->op != SIO_DOWNLOAD) {
		const char	*busy = NULL;

		if (op_busy(o->ws, o, o->name))
			busy = o->name;
		else if (o->dest[0] != '\0' && op_busy(o->ws, o, o->dest))
			busy = o->dest;
		if (busy != NULL) {
			textf(text, sizeof(text), "image %s is busy with "
			    "another operation; retry when it has ended",
			    busy);
			free(set);
			op_end(o, EBUSY, text);
			return;
		}
	}
	if (m->op != SIO_LIST && m->op != SIO_DELETE &&
	    m->op != SIO_DOWNLOAD && op_count(o->ws) > IMAGE_WS_JOBS_MAX) {
		textf(text, sizeof(text), "the workspace runs %d image "
		    "operations already; retry when one has ended",
		    IMAGE_WS_JOBS_MAX);
		free(set);
		op_end(o, EBUSY, text);
		return;
	}

	switch (m->op) {
	case SIO_LIST:
		req_list(o, set);
		rc = -1;
		textf(text, sizeof(text), "%u image%s", set->n,
		    set->n == 1 ? "" : "s");
		break;
	case SIO_CREATE:
		rc = req_create(o, set, text, sizeof(text));
		break;
	case SIO_CONVERT:
		rc = req_convert(o, set, text, sizeof(text));
		break;
	case SIO_RESIZE:
		rc = req_resize(o, set, text, sizeof(text));
		break;
	case SIO_DELETE:
		rc = req_delete(o, set, text, sizeof(text));
		break;
	case SIO_UPLOAD:
		rc = req_upload(o, set, text, sizeof(text));
		break;
	case SIO_DOWNLOAD:
		rc = req_download(o, set, text, sizeof(text));
		break;
	case SIO_INFO:
	case SIO_SNAP_LIST:
		if (set == NULL || (img = images_find(set, o->name)) ==
		    NULL) {
			struct catalog_image *ci = imgcat_lookup(cat, o->name);
			struct ws_image	 cimg;

			if (ci == NULL) {
				textf(text, sizeof(text), "no image %s (see "
				    "image_list)", o->name);
				rc = ENOENT;
				break;
			}
			if (m->op == SIO_SNAP_LIST) {
				textf(text, sizeof(text), "catalog image %s "
				    "is raw: it has no snapshots", o->name);
				rc = -1;
				break;
			}
			memset(&cimg, 0, sizeof(cimg));
			textf(cimg.name, sizeof(cimg.name), "%s", o->name);
			cimg.format = IMG_RAW;
			cimg.virtual_bytes = cimg.disk_bytes = ci->disk_bytes;
			send_entry(id, &cimg, 1, 0);
			textf(text, sizeof(text), "catalog image %s",
			    o->name);
			rc = -1;
			break;
		}
		if (m->op == SIO_SNAP_LIST && img->format != IMG_QCOW2) {
			textf(text, sizeof(text), "image %s is %s: only "
			    "qcow2 images have snapshots", o->name,
			    image_format_name(img->format));
			rc = -1;
			break;
		}
		rc = op_info(o, set, img, text, sizeof(text));
		break;
	default:	/* the snapshot changes: info, then the change */
		if ((rc = writable(o, set, &img, text, sizeof(text))) != 0)
			break;
		if (img->format != IMG_QCOW2) {
			textf(text, sizeof(text), "image %s is %s: only "
			    "qcow2 images have snapshots (image_convert it "
			    "to qcow2)", o->name,
			    image_format_name(img->format));
			rc = EINVAL;
			break;
		}
		if (!valid_object_name(o->tag)) {
			textf(text, sizeof(text), "tag is required");
			rc = EINVAL;
			break;
		}
		rc = op_info(o, set, img, text, sizeof(text));
		break;
	}
	free(set);
	if (rc == -1)
		op_end(o, 0, text);
	else if (rc != 0)
		op_end(o, rc, text);
}

/* mcvmd no longer waits for request id: it ends now, if it runs. */
void
images_cancel(uint32_t id)
{
	struct img_op	*o;

	LIST_FOREACH(o, &ops, entry)
		if (o->id == id)
			break;
	if (o == NULL)
		return;
	qemuimg_cancel(o->job);
	o->job = NULL;
	op_end(o, ECANCELED, "cancelled; nothing was changed");
}

/*
 * For a VM's disks (vmdisks.c): workspace ws's image directory, or -1
 * with text (ENOENT: it has no images yet).
 */
int
images_ws_dir(uint64_t ws, char *text, size_t len)
{
	int	 fd;

	if ((fd = ws_dir(ws, 0, text, len)) == -2) {
		textf(text, len, "your workspace has no images yet (see "
		    "image_create)");
		errno = ENOENT;
		return -1;
	}
	return fd;
}

/*
 * Whether a VM may use image name of workspace ws now: no operation
 * runs on it, and to be written (a persistent disk) no image backs on
 * it.  0, or an errno value with text.
 */
int
images_vm_check(uint64_t ws, int dfd, const char *name, int write,
    char *text, size_t len)
{
	static struct ws_images	 set;
	struct ws_image		*img;
	int			 rc;

	if (op_busy(ws, NULL, name)) {
		textf(text, len, "image %s is busy with an image operation: "
		    "retry once it ends", name);
		return EBUSY;
	}
	if (!write)
		return 0;
	if ((rc = images_scan(dfd, &set, text, len)) != 0)
		return rc;
	if ((img = images_find(&set, name)) != NULL && img->users > 0) {
		textf(text, len, "image %s is the backing of %u image%s: it "
		    "cannot be a persistent disk while they exist", name,
		    img->users, img->users == 1 ? "" : "s");
		return EBUSY;
	}
	return 0;
}

/* Removes what a crash left half made in one workspace's store. */
static void
images_sweep(int dfd)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, IMAGE_NEW_PREFIX,
		    strlen(IMAGE_NEW_PREFIX)) == 0 &&
		    unlinkat(dfd, de->d_name, 0) == 0)
			log_info("image store: removed the unfinished %s",
			    de->d_name);
	closedir(d);
}

/*
 * wsdir is <statedir>/workspaces, stored's own, and iev the channel to
 * mcvmd.  Sweeps every store once.
 */
void
images_init(int wsdir, struct catalog *c, struct imsgev *iev)
{
	struct dirent		*de;
	DIR			*d;
	char			 text[IMAGE_TEXT_MAX];
	uint64_t		 ws;
	char			*end;
	int			 fd, dfd;

	wsroot = wsdir;
	cat = c;
	parent = iev;
	if ((fd = fcntl(wsroot, F_DUPFD_CLOEXEC, 0)) == -1 ||
	    (d = fdopendir(fd)) == NULL)
		fatal("%s", WS_DIR);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		ws = strtoull(de->d_name, &end, 10);
		if (*end != '\0' || ws == 0)
			continue;
		if ((dfd = ws_dir(ws, 0, text, sizeof(text))) >= 0) {
			images_sweep(dfd);
			close(dfd);
		}
	}
	closedir(d);
}
