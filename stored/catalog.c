/*
 * The image catalog: see catalog.h.
 *
 * Files are opened O_NOFOLLOW as root, so an operator may keep them
 * readable by root alone; stored itself never writes them.  Verification
 * streams each file through SHA-256 in bounded steps, so that the event
 * loop can answer requests while a large disk is being hashed.  Because
 * the descriptors stay open, the bytes verified are the bytes served;
 * a file whose size, times or inode change afterwards is refused.
 *
 * What was verified is recorded in the store (imgcat_records_save): per
 * file, its pinned digest and its identity (device, inode, size, mtime
 * and ctime, to the nanosecond).  At the next start a file whose fstat
 * gives the same identity for the same pin is not hashed again: any
 * write to it, or a replacement, changes its ctime at least, which no
 * one but the clock's owner can set back.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "catalog.h"
#include "hash.h"
#include "log.h"

#define QCOW2_MAGIC	"QFI\xfb"

static const char *const imgcat_file_name[CAT_NFILES] = {
	[CAT_KERNEL] = "kernel",
	[CAT_INITRD] = "initrd",
	[CAT_DISK] = "disk",
};

static void
imgcat_close_files(struct catalog_image *img)
{
	int	 i;

	for (i = 0; i < CAT_NFILES; i++) {
		if (img->files[i].fd != -1)
			close(img->files[i].fd);
		img->files[i].fd = -1;
	}
}

/* Marks an image failed for good; it is never served. */
static void __attribute__((format(printf, 2, 3)))
imgcat_fail(struct catalog_image *img, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(img->text, sizeof(img->text), fmt, ap);
	va_end(ap);
	img->state = CAT_FAILED;
	imgcat_close_files(img);
	log_warnx("image %s: %s", img->conf->name, img->text);
}

static int
imgcat_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Opens every file of every image, as root.  An image with a file that
 * cannot be opened is marked failed now and reported in its turn.
 */
void
imgcat_open(struct catalog *cat, const struct mcvm_config *conf)
{
	struct catalog_image	*img;
	struct catalog_file_ent	*f;
	const struct image_conf	*ic;
	size_t			 i;
	int			 j;

	memset(cat, 0, sizeof(*cat));
	TAILQ_INIT(&cat->deps);
	if ((cat->md = EVP_MD_CTX_new()) == NULL ||
	    (cat->buf = malloc(CATALOG_READ_SIZE)) == NULL)
		fatalx("%s: out of memory", __func__);
	/* Load the digest now: later, the sandbox is in place. */
	if (EVP_DigestInit_ex(cat->md, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);

	cat->n = conf->nimages;
	for (i = 0; i < conf->nimages; i++) {
		ic = &conf->images[i];
		img = &cat->images[i];
		img->conf = ic;
		img->state = CAT_PENDING;
		img->files[CAT_KERNEL].path = ic->kernel;
		img->files[CAT_KERNEL].sha256 = ic->kernel_sha256;
		img->files[CAT_INITRD].path =
		    ic->initrd[0] != '\0' ? ic->initrd : NULL;
		img->files[CAT_INITRD].sha256 = ic->initrd_sha256;
		img->files[CAT_DISK].path = ic->disk;
		img->files[CAT_DISK].sha256 = ic->disk_sha256;
		for (j = 0; j < CAT_NFILES; j++)
			img->files[j].fd = -1;
		for (j = 0; j < CAT_NFILES; j++) {
			f = &img->files[j];
			if (f->path == NULL)
				continue;
			f->fd = open(f->path,
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			if (f->fd == -1) {
				imgcat_fail(img, "%s: %s",
				    imgcat_file_name[j],
				    errno == ELOOP ? "is a symbolic link" :
				    strerror(errno));
				break;
			}
			if (fstat(f->fd, &f->st) == -1) {
				imgcat_fail(img, "%s: fstat: %s",
				    imgcat_file_name[j], strerror(errno));
				break;
			}
			if (!S_ISREG(f->st.st_mode)) {
				imgcat_fail(img, "%s: not a regular file",
				    imgcat_file_name[j]);
				break;
			}
		}
		if (img->state == CAT_PENDING)
			img->disk_bytes = (uint64_t)img->files[CAT_DISK].st.st_size;
	}
}

/* Finishes one file's digest and compares it with its pin. */
static int
imgcat_file_done(struct catalog *cat, struct catalog_image *img,
    struct catalog_file_ent *f)
{
	uint8_t		 md[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0;
	char		 hex[2 * SHA256_LEN + 1];
	struct stat	 st;
	const char	*name = imgcat_file_name[img->cur];

	if (EVP_DigestFinal_ex(cat->md, md, &mdlen) != 1 ||
	    mdlen != SHA256_LEN) {
		imgcat_fail(img, "%s: cannot compute sha256", name);
		return -1;
	}
	hex_encode(md, SHA256_LEN, hex);
	if (strcmp(hex, f->sha256) != 0) {
		imgcat_fail(img, "%s: sha256 mismatch", name);
		return -1;
	}
	if (fstat(f->fd, &st) == -1 || !imgcat_same_file(&st, &f->st) ||
	    img->off != f->st.st_size) {
		imgcat_fail(img, "%s: changed while being verified", name);
		return -1;
	}
	return 0;
}

/*
 * A file verified before with the same identity: it is not hashed, but
 * the disk's header is checked again, and the file must not have changed
 * since it was opened.
 */
static int
imgcat_known_file(struct catalog *cat, struct catalog_image *img,
    struct catalog_file_ent *f)
{
	struct stat	 st;
	const char	*name = imgcat_file_name[img->cur];
	ssize_t		 n;

	if (img->cur == CAT_DISK) {
		n = pread(f->fd, cat->buf, sizeof(QCOW2_MAGIC) - 1, 0);
		if (n == -1) {
			imgcat_fail(img, "%s: read: %s", name, strerror(errno));
			return -1;
		}
		if ((size_t)n == sizeof(QCOW2_MAGIC) - 1 &&
		    memcmp(cat->buf, QCOW2_MAGIC, sizeof(QCOW2_MAGIC) - 1) ==
		    0) {
			imgcat_fail(img, "disk: is a qcow2 image; catalog "
			    "disks must be raw");
			return -1;
		}
	}
	if (fstat(f->fd, &st) == -1 || !imgcat_same_file(&st, &f->st)) {
		imgcat_fail(img, "%s: changed while being verified", name);
		return -1;
	}
	return 0;
}

/*
 * Hashes at most about budget bytes.  Returns an image once it is
 * decided (verified or failed), so that its status can be sent, or NULL
 * when the budget is spent or every image is decided.
 */
struct catalog_image *
imgcat_verify_step(struct catalog *cat, uint64_t budget)
{
	struct catalog_image	*img;
	struct catalog_file_ent	*f;
	ssize_t			 n;

	while (cat->next < cat->n) {
		img = &cat->images[cat->next];
		if (img->state != CAT_PENDING) {
			cat->changed = 1;
			cat->next++;
			return img;
		}
		if (img->cur == CAT_NFILES) {
			img->state = CAT_OK;
			(void)snprintf(img->text, sizeof(img->text), "%s",
			    img->hashed ? "verified" : "verified (unchanged "
			    "since its last verification: not hashed again)");
			log_info("image %s: %s", img->conf->name, img->text);
			cat->next++;
			return img;
		}
		f = &img->files[img->cur];
		if (f->path == NULL) {
			img->cur++;
			continue;
		}
		if (f->known && img->off == 0) {
			if (imgcat_known_file(cat, img, f) == 0)
				img->cur++;
			continue;
		}
		if (budget == 0)
			return NULL;
		if (img->off == 0 &&
		    EVP_DigestInit_ex(cat->md, EVP_sha256(), NULL) != 1) {
			imgcat_fail(img, "cannot start sha256");
			continue;
		}
		n = pread(f->fd, cat->buf, CATALOG_READ_SIZE, img->off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			imgcat_fail(img, "%s: read: %s",
			    imgcat_file_name[img->cur], strerror(errno));
			continue;
		}
		if (n == 0) {
			if (imgcat_file_done(cat, img, f) == 0) {
				img->cur++;
				img->off = 0;
				img->hashed = 1;
				cat->changed = 1;
			}
			continue;
		}
		/* The disk is handed to QEMU as raw: a qcow2 file there
		 * would let a guest name its own backing file. */
		if (img->cur == CAT_DISK && img->off == 0 &&
		    (size_t)n >= sizeof(QCOW2_MAGIC) - 1 &&
		    memcmp(cat->buf, QCOW2_MAGIC, sizeof(QCOW2_MAGIC) - 1) ==
		    0) {
			imgcat_fail(img, "disk: is a qcow2 image; catalog "
			    "disks must be raw");
			continue;
		}
		if (EVP_DigestUpdate(cat->md, cat->buf, (size_t)n) != 1) {
			imgcat_fail(img, "cannot compute sha256");
			continue;
		}
		img->off += n;
		budget = (uint64_t)n >= budget ? 0 : budget - (uint64_t)n;
	}
	return NULL;
}

int
imgcat_verified(const struct catalog *cat)
{
	return cat->next == cat->n;
}

/*
 * Reads the records of earlier verifications from file in dirfd and
 * marks each catalog file whose pin and identity they hold as known.  A
 * missing file is no error; an unreadable or malformed one is ignored
 * (everything is hashed).  Returns how many files are known.
 */
int
imgcat_records_load(struct catalog *cat, int dirfd, const char *file)
{
	static char		 buf[CATALOG_CACHE_MAX + 1];
	struct catalog_file_ent	*f;
	struct stat		 st;
	char			 hex[2 * SHA256_LEN + 1], *line, *nl;
	uintmax_t		 dev, ino;
	intmax_t		 size, ms, cs;
	long			 mns, cns;
	size_t			 used = 0, i;
	ssize_t			 n;
	int			 fd, j, len, known = 0;

	if ((fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NOCTTY)) == -1) {
		if (errno != ENOENT)
			log_warn("%s", file);
		return 0;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > CATALOG_CACHE_MAX) {
		log_warnx("%s: not a record file; every image is hashed",
		    file);
		close(fd);
		return 0;
	}
	while (used < CATALOG_CACHE_MAX &&
	    (n = read(fd, buf + used, CATALOG_CACHE_MAX - used)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_warn("%s", file);
			close(fd);
			return 0;
		}
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';

	for (line = buf; line < buf + used; line = nl + 1) {
		if ((nl = strchr(line, '\n')) == NULL)
			break;		/* a cut last line counts for nothing */
		*nl = '\0';
		len = -1;
		if (sscanf(line, "%64[0-9a-f] %ju %ju %jd %jd %ld %jd %ld%n",
		    hex, &dev, &ino, &size, &ms, &mns, &cs, &cns, &len) != 8 ||
		    len != nl - line || strlen(hex) != 2 * SHA256_LEN)
			continue;
		for (i = 0; i < cat->n; i++) {
			if (cat->images[i].state != CAT_PENDING)
				continue;
			for (j = 0; j < CAT_NFILES; j++) {
				f = &cat->images[i].files[j];
				if (f->fd == -1 || f->known ||
				    strcmp(f->sha256, hex) != 0 ||
				    (uintmax_t)f->st.st_dev != dev ||
				    (uintmax_t)f->st.st_ino != ino ||
				    (intmax_t)f->st.st_size != size ||
				    (intmax_t)f->st.st_mtim.tv_sec != ms ||
				    f->st.st_mtim.tv_nsec != mns ||
				    (intmax_t)f->st.st_ctim.tv_sec != cs ||
				    f->st.st_ctim.tv_nsec != cns)
					continue;
				f->known = 1;
				known++;
			}
		}
	}
	return known;
}

/*
 * Writes the records of every verified image's files to file in dirfd,
 * through a temporary file renamed over it.  0, or -1 (logged).
 */
int
imgcat_records_save(struct catalog *cat, int dirfd, const char *file)
{
	static char		 buf[CATALOG_CACHE_MAX];
	const struct catalog_file_ent *f;
	char			 tmp[NAME_MAX + 1];
	size_t			 used = 0, i, off;
	ssize_t			 n;
	int			 fd, j, len;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= (int)sizeof(tmp))
		return -1;
	for (i = 0; i < cat->n; i++) {
		if (cat->images[i].state != CAT_OK)
			continue;
		for (j = 0; j < CAT_NFILES; j++) {
			f = &cat->images[i].files[j];
			if (f->path == NULL || f->fd == -1)
				continue;
			len = snprintf(buf + used, sizeof(buf) - used,
			    "%s %ju %ju %jd %jd %ld %jd %ld\n", f->sha256,
			    (uintmax_t)f->st.st_dev, (uintmax_t)f->st.st_ino,
			    (intmax_t)f->st.st_size,
			    (intmax_t)f->st.st_mtim.tv_sec,
			    (long)f->st.st_mtim.tv_nsec,
			    (intmax_t)f->st.st_ctim.tv_sec,
			    (long)f->st.st_ctim.tv_nsec);
			if (len < 0 || (size_t)len >= sizeof(buf) - used) {
				log_warnx("%s: too many records", file);
				return -1;
			}
			used += (size_t)len;
		}
	}
	if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600)) == -1) {
		log_warn("%s", tmp);
		return -1;
	}
	for (off = 0; off < used; off += (size_t)n) {
		if ((n = write(fd, buf + off, used - off)) == -1) {
			if (errno == EINTR) {
				n = 0;
				continue;
			}
			break;
		}
	}
	if (off < used || fsync(fd) == -1) {
		log_warn("%s", tmp);
		close(fd);
		(void)unlinkat(dirfd, tmp, 0);
		return -1;
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, file) == -1) {
		log_warn("rename %s", tmp);
		(void)unlinkat(dirfd, tmp, 0);
		return -1;
	}
	cat->changed = 0;
	return 0;
}

struct catalog_image *
imgcat_lookup(struct catalog *cat, const char *name)
{
	size_t	 i;

	for (i = 0; i < cat->n; i++)
		if (strcmp(cat->images[i].conf->name, name) == 0)
			return &cat->images[i];
	return NULL;
}

/*
 * Whether an image may be served now: 0, or an errno value with an
 * explanation in text.  A verified file that changed since is refused
 * for good.
 */
int
imgcat_image_usable(struct catalog_image *img, char *text, size_t len)
{
	struct stat	 st;
	int		 i;

	switch (img->state) {
	case CAT_PENDING:
		(void)snprintf(text, len, "image %s is still being verified",
		    img->conf->name);
		return EAGAIN;
	case CAT_FAILED:
		(void)snprintf(text, len, "image %s failed verification: %s",
		    img->conf->name, img->text);
		return EIO;
	case CAT_OK:
		break;
	}
	for (i = 0; i < CAT_NFILES; i++) {
		if (img->files[i].path == NULL)
			continue;
		if (fstat(img->files[i].fd, &st) == -1 ||
		    !imgcat_same_file(&st, &img->files[i].st)) {
			imgcat_fail(img, "%s: changed since it was verified",
			    imgcat_file_name[i]);
			(void)snprintf(text, len, "image %s: %s",
			    img->conf->name, img->text);
			return ESTALE;
		}
	}
	return 0;
}

/*
 * Records that VM vm's disk depends on catalog image name (its overlay
 * names it as backing).  -1 with ENOENT when no such image is in the
 * catalog, ENOMEM when out of memory.
 */
int
imgcat_dep_add(struct catalog *cat, const char *vm, const char *name)
{
	struct catalog_image	*img;
	struct catalog_dep	*d;

	if ((img = imgcat_lookup(cat, name)) == NULL) {
		errno = ENOENT;
		return -1;
	}
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return -1;
	(void)snprintf(d->vm, sizeof(d->vm), "%s", vm);
	d->image = img;
	img->users++;
	TAILQ_INSERT_TAIL(&cat->deps, d, entry);
	return 0;
}

void
imgcat_dep_del(struct catalog *cat, const char *vm)
{
	struct catalog_dep	*d;

	TAILQ_FOREACH(d, &cat->deps, entry) {
		if (strcmp(d->vm, vm) == 0) {
			TAILQ_REMOVE(&cat->deps, d, entry);
			d->image->users--;
			free(d);
			return;
		}
	}
}

/*
 * The rule every path that would remove or replace a catalog image must
 * follow: refused (EBUSY) while any VM disk is an overlay of it.
 */
int
imgcat_remove_check(const struct catalog_image *img, char *text, size_t len)
{
	if (img->users > 0) {
		(void)snprintf(text, len, "image %s is the base of %u VM "
		    "disk%s", img->conf->name, img->users,
		    img->users == 1 ? "" : "s");
		return EBUSY;
	}
	return 0;
}

void
imgcat_close(struct catalog *cat)
{
	struct catalog_dep	*d;
	size_t			 i;

	for (i = 0; i < cat->n; i++)
		imgcat_close_files(&cat->images[i]);
	while ((d = TAILQ_FIRST(&cat->deps)) != NULL) {
		TAILQ_REMOVE(&cat->deps, d, entry);
		free(d);
	}
	EVP_MD_CTX_free(cat->md);
	free(cat->buf);
	cat->md = NULL;
	cat->buf = NULL;
	cat->n = 0;
}
