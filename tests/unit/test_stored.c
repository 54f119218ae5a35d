/*
 * mcvm-stored's logic outside its main: the catalog's SHA-256 checks,
 * the reflink probe and its fallback, overlays made by the real qemu-img,
 * deletion that follows no symlink, and refusal of ids that are not ids.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "config.h"
#include "disk.h"
#include "hash.h"
#include "msg_store.h"
#include "qemuimg.h"

#define VM_A	"vm-00000000000000aa"
#define VM_B	"vm-00000000000000bb"

static char			 dir[64];
static struct mcvm_config	*conf;
static struct catalog		*cat;
static int			 vmsfd = -1;

static void
setup(void)
{
	char	 path[128];

	(void)snprintf(dir, sizeof(dir), "/tmp/stored-unit.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	conf = calloc(1, sizeof(*conf));
	cat = calloc(1, sizeof(*cat));
	cr_assert(conf != NULL && cat != NULL);
	(void)snprintf(path, sizeof(path), "%s/vms", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	vmsfd = open(path, O_RDONLY | O_DIRECTORY);
	cr_assert_neq(vmsfd, -1);
}

static void
teardown(void)
{
	char	 cmd[128];

	if (cat->md != NULL)
		imgcat_close(cat);
	free(cat);
	free(conf);
	close(vmsfd);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("cannot remove %s", dir);
}

/* Writes len bytes of a pattern to dir/name; returns its sha256 hex. */
static void
put_file(const char *name, size_t len, int seed, char *path, char hex[65])
{
	uint8_t	*buf = malloc(len ? len : 1), md[SHA256_LEN];
	size_t	 i;
	FILE	*f;

	cr_assert_not_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed);
	(void)snprintf(path, PATH_MAX, "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	sha256(buf, len, md);
	hex_encode(md, SHA256_LEN, hex);
	free(buf);
}

/* An image of three files; disk of disklen bytes. */
static struct image_conf *
add_image(const char *name, size_t disklen, int seed)
{
	struct image_conf	*ic = &conf->images[conf->nimages++];
	char			 f[64];

	(void)snprintf(ic->name, sizeof(ic->name), "%s", name);
	(void)snprintf(f, sizeof(f), "%s.kernel", name);
	put_file(f, 5000, seed, ic->kernel, ic->kernel_sha256);
	(void)snprintf(f, sizeof(f), "%s.initrd", name);
	put_file(f, 3000, seed + 1, ic->initrd, ic->initrd_sha256);
	(void)snprintf(f, sizeof(f), "%s.disk", name);
	put_file(f, disklen, seed + 2, ic->disk, ic->disk_sha256);
	return ic;
}

static void
verify_all(void)
{
	int	 rounds = 0;

	while (!imgcat_verified(cat)) {
		(void)imgcat_verify_step(cat, 64 * 1024);
		cr_assert_lt(++rounds, 100000);
	}
}

TestSuite(stored_catalog, .init = setup, .fini = teardown);

Test(stored_catalog, good_and_bad_sha256)
{
	struct image_conf	*bad;
	struct catalog_image	*img;
	char			 text[256];

	add_image("good", 3 * CATALOG_READ_SIZE + 123, 1);
	bad = add_image("bad", 100000, 7);
	bad->disk_sha256[0] = bad->disk_sha256[0] == '0' ? '1' : '0';
	imgcat_open(cat, conf);

	img = imgcat_lookup(cat, "good");
	cr_assert_not_null(img);
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), EAGAIN);
	cr_assert_str_eq(text, "image good is still being verified");
	verify_all();
	cr_assert_eq(img->state, CAT_OK);
	cr_assert_str_eq(img->text, "verified");
	cr_assert_eq(img->disk_bytes, 3 * CATALOG_READ_SIZE + 123);
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), 0);

	img = imgcat_lookup(cat, "bad");
	cr_assert_eq(img->state, CAT_FAILED);
	cr_assert_str_eq(img->text, "disk: sha256 mismatch");
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), EIO);
	cr_assert_eq(img->files[CAT_DISK].fd, -1, "failed image keeps fds");
	cr_assert_null(imgcat_lookup(cat, "other"));
}

Test(stored_catalog, steps_report_each_image_once_in_order)
{
	struct catalog_image	*img;
	const char		*seen[4];
	int			 n = 0;

	add_image("one", 10000, 1);
	add_image("two", 10000, 2);
	conf->images[1].kernel_sha256[5] ^= 1;
	add_image("three", 10000, 3);
	imgcat_open(cat, conf);
	while (!imgcat_verified(cat))
		while ((img = imgcat_verify_step(cat, 4096)) != NULL) {
			cr_assert_lt(n, 3);
			seen[n++] = img->conf->name;
		}
	cr_assert_eq(n, 3);
	cr_assert_str_eq(seen[0], "one");
	cr_assert_str_eq(seen[1], "two");
	cr_assert_str_eq(seen[2], "three");
}

Test(stored_catalog, missing_symlink_and_qcow2_refused)
{
	struct image_conf	*a, *b, *c;
	char			 link[PATH_MAX];
	int			 fd;

	a = add_image("missing", 1000, 1);
	(void)snprintf(a->disk, sizeof(a->disk), "%s/nonexistent", dir);
	b = add_image("linked", 1000, 2);
	(void)snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(b->kernel, link), 0);
	(void)snprintf(b->kernel, sizeof(b->kernel), "%s", link);
	c = add_image("qcow", 1000, 3);
	cr_assert_neq(fd = open(c->disk, O_WRONLY), -1);
	cr_assert_eq(write(fd, "QFI\xfb", 4), 4);
	close(fd);
	/* pin the file as it now is, so only the format refuses it */
	{
		char cmd[PATH_MAX + 64];
		FILE *p;

		(void)snprintf(cmd, sizeof(cmd), "sha256sum '%s'", c->disk);
		cr_assert_not_null(p = popen(cmd, "r"));
		cr_assert_eq(fread(c->disk_sha256, 1, 64, p), 64);
		pclose(p);
	}
	imgcat_open(cat, conf);
	verify_all();
	cr_assert_str_eq(cat->images[0].text,
	    "disk: No such file or directory");
	cr_assert_str_eq(cat->images[1].text, "kernel: is a symbolic link");
	cr_assert_str_eq(cat->images[2].text,
	    "disk: is a qcow2 image; catalog disks must be raw");
}

Test(stored_catalog, changed_after_verification_is_stale)
{
	struct catalog_image	*img;
	struct image_conf	*ic;
	char			 text[256];
	int			 fd;

	ic = add_image("img", 20000, 4);
	imgcat_open(cat, conf);
	verify_all();
	img = imgcat_lookup(cat, "img");
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), 0);
	cr_assert_neq(fd = open(ic->initrd, O_WRONLY | O_APPEND), -1);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), ESTALE);
	cr_assert_str_eq(text, "image img: initrd: changed since it was "
	    "verified");
	cr_assert_eq(imgcat_image_usable(img, text, sizeof(text)), EIO);
}

Test(stored_catalog, base_in_use_cannot_be_removed)
{
	struct catalog_image	*img;
	char			 text[256];

	add_image("base", 1000, 5);
	imgcat_open(cat, conf);
	img = imgcat_lookup(cat, "base");
	cr_assert_eq(imgcat_remove_check(img, text, sizeof(text)), 0);
	cr_assert_eq(imgcat_dep_add(cat, VM_A, "base"), 0);
	cr_assert_eq(imgcat_dep_add(cat, VM_B, "base"), 0);
	cr_assert_eq(imgcat_dep_add(cat, VM_B, "nosuch"), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(imgcat_remove_check(img, text, sizeof(text)), EBUSY);
	cr_assert_str_eq(text, "image base is the base of 2 VM disks");
	imgcat_dep_del(cat, VM_A);
	cr_assert_eq(imgcat_remove_check(img, text, sizeof(text)), EBUSY);
	imgcat_dep_del(cat, VM_B);
	imgcat_dep_del(cat, VM_B);
	cr_assert_eq(imgcat_remove_check(img, text, sizeof(text)), 0);
}

/* --- disks ---------------------------------------------------------------- */

TestSuite(stored_disk, .init = setup, .fini = teardown);

static int	 overlay_calls;

/* What stored does: the overlay by qemu-img, when no clone can be. */
static int
real_overlay(int dfd, const char *file, const char *image, uint64_t bytes,
    char *text, size_t len, void *arg)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-q", "-f", "qcow2", "-F",
		    "raw", "-b", NULL, "-u", file, NULL, NULL },
		.dirfd = dfd, .xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
		.fsize_max = QEMUIMG_OVERLAY_FSIZE,
	};
	char	 backing[128], size[32];

	overlay_calls++;
	(void)snprintf(backing, sizeof(backing), "mcvm-catalog:%s", image);
	(void)snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
	spec.argv[8] = backing;
	spec.argv[11] = size;
	return qemuimg_run(&spec, -1, NULL, NULL, text, len, NULL, NULL);
}

typedef int (*overlay_fn)(int, const char *, const char *, uint64_t, char *,
    size_t, void *);

/* disk_create and, where it must, the overlay and disk_create_finish. */
static int
create(int vmsfd, const char *vm, const char *image, int base,
    uint64_t bytes, overlay_fn overlay, void *arg, struct vm_disk *vd,
    char *text, size_t len)
{
	char	 why[QEMUIMG_OUTPUT_MAX] = "";
	int	 dfd, rc;

	rc = disk_create(vmsfd, vm, image, base, vd, &dfd, text, len);
	if (rc != EINPROGRESS)
		return rc;
	rc = overlay(dfd, VM_DISK_QCOW2, image, bytes, why, sizeof(why), arg);
	return disk_create_finish(vmsfd, vm, image, bytes, dfd, rc, why, vd,
	    text, len);
}

static int
open_base(struct image_conf **icp)
{
	struct image_conf	*ic = add_image("deb", 1 << 20, 9);
	int			 fd;

	cr_assert_neq(fd = open(ic->disk, O_RDONLY), -1);
	if (icp != NULL)
		*icp = ic;
	return fd;
}

static char *
run_out(const char *cmd)
{
	static char	 buf[8192];
	size_t		 n;
	FILE		*p;

	cr_assert_not_null(p = popen(cmd, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* What this test's vms directory holds, as ls -A prints it. */
static char *
vms_listing(void)
{
	char	 cmd[128];

	(void)snprintf(cmd, sizeof(cmd), "ls -A '%s/vms'", dir);
	return run_out(cmd);
}

Test(stored_disk, errno_classes)
{
	cr_assert(disk_reflink_errno(EXDEV));
	cr_assert(disk_reflink_errno(EOPNOTSUPP));
	cr_assert(disk_reflink_errno(EINVAL));
	cr_assert(disk_reflink_errno(ENOTTY));
	cr_assert(!disk_reflink_errno(ENOSPC));
	cr_assert(!disk_reflink_errno(EIO));
	cr_assert(!disk_reflink_errno(EBADF));
}

Test(stored_disk, probe_on_this_tmp)
{
	char	 why[256];
	int	 base = open_base(NULL), r;
	char	*fs = run_out("stat -f -c %T /tmp");

	r = disk_reflink_probe(vmsfd, base, why, sizeof(why));
	if (strncmp(fs, "ext2/ext3", 9) == 0 || strncmp(fs, "tmpfs", 5) == 0) {
		cr_assert_eq(r, 0, "%s", why);
		cr_assert(strstr(why, "does not support reflinks") != NULL,
		    "%s", why);
	} else
		cr_assert_neq(r, -1, "%s", why);
	/* the probe leaves nothing behind */
	cr_assert_str_empty(vms_listing());
	close(base);
}

Test(stored_disk, create_falls_back_to_a_real_overlay)
{
	struct image_conf	*ic;
	struct vm_disk		 vd;
	struct stat		 st;
	char			 text[DISK_TEXT_MAX], cmd[256], *info;
	int			 base = open_base(&ic), rc;

	overlay_calls = 0;
	rc = create(vmsfd, VM_A, "deb", base, 1 << 20, real_overlay,
	    NULL, &vd, text, sizeof(text));
	cr_assert_eq(rc, 0, "%s", text);
	if (vd.format == DISK_RAW) {
		/* This /tmp clones: nothing to fall back from. */
		cr_assert_eq(overlay_calls, 0);
		close(vd.fd);
		close(base);
		return;
	}
	cr_assert_eq(overlay_calls, 1);
	cr_assert_eq(vd.format, DISK_QCOW2);
	cr_assert_eq(vd.bytes, 1 << 20);
	cr_assert_str_eq(vd.backing, "deb");
	cr_assert_eq(fcntl(vd.fd, F_GETFL) & O_ACCMODE, O_RDWR);
	close(vd.fd);
	cr_assert_eq(fstatat(vmsfd, VM_A, &st, 0), 0);
	cr_assert_eq(st.st_mode & 07777, VM_DIR_MODE);
	cr_assert_eq(fstatat(vmsfd, VM_A "/" VM_DISK_RAW, &st, 0), -1,
	    "the failed clone was left behind");
	(void)snprintf(cmd, sizeof(cmd), "qemu-img info --output=json "
	    "'%s/vms/%s/%s'", dir, VM_A, VM_DISK_QCOW2);
	info = run_out(cmd);
	cr_assert(strstr(info, "\"format\": \"qcow2\"") != NULL, "%s", info);
	cr_assert(strstr(info, "\"backing-filename\": \"mcvm-catalog:deb\"")
	    != NULL, "%s", info);
	cr_assert(strstr(info, "\"virtual-size\": 1048576") != NULL, "%s",
	    info);

	/* open finds the same disk; a second create is EEXIST */
	cr_assert_eq(disk_open(vmsfd, VM_A, &vd, text, sizeof(text)), 0);
	cr_assert_eq(vd.format, DISK_QCOW2);
	cr_assert_str_eq(vd.backing, "deb");
	close(vd.fd);
	cr_assert_eq(create(vmsfd, VM_A, "deb", base, 1 << 20,
	    real_overlay, NULL, &vd, text, sizeof(text)), EEXIST);
	close(base);
}

static int
failing_overlay(int dfd, const char *file, const char *image,
    uint64_t bytes, char *text, size_t len, void *arg)
{
	int	 fd;

	/* leave debris, as a half-done qemu-img would */
	fd = openat(dfd, file, O_CREAT | O_WRONLY, 0600);
	if (fd != -1)
		close(fd);
	(void)snprintf(text, len, "no space");
	return ENOSPC;
}

Test(stored_disk, failed_create_leaves_nothing)
{
	struct vm_disk	 vd;
	struct stat	 st;
	char		 text[DISK_TEXT_MAX];
	int		 base = open_base(NULL), rc;

	rc = create(vmsfd, VM_B, "deb", base, 1 << 20, failing_overlay,
	    NULL, &vd, text, sizeof(text));
	if (rc == 0) {		/* cloned: the overlay was never needed */
		close(vd.fd);
		close(base);
		return;
	}
	cr_assert_eq(rc, ENOSPC);
	cr_assert(strstr(text, "no space") != NULL, "%s", text);
	cr_assert_eq(fstatat(vmsfd, VM_B, &st, AT_SYMLINK_NOFOLLOW), -1);
	cr_assert_eq(errno, ENOENT);
	close(base);
}

Test(stored_disk, bad_ids_refused)
{
	static const char *const bad[] = {
		"", "vm-", "vm-0", "../etc", "vm-../../../etc/x",
		"vm-00000000000000AA", "vm-00000000000000aa/..",
		"VM-00000000000000aa", "vm-000000000000000aa", ".",
		"vm-0000000000000g00", "xx-00000000000000aa",
	};
	struct vm_disk	 vd;
	char		 text[DISK_TEXT_MAX];
	size_t		 i;
	int		 base = open_base(NULL);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(create(vmsfd, bad[i], "deb", base, 1 << 20,
		    real_overlay, NULL, &vd, text, sizeof(text)), EINVAL,
		    "%s", bad[i]);
		cr_assert_eq(disk_open(vmsfd, bad[i], &vd, text,
		    sizeof(text)), EINVAL, "%s", bad[i]);
		cr_assert_eq(disk_delete(vmsfd, bad[i], text, sizeof(text)),
		    EINVAL, "%s", bad[i]);
	}
	cr_assert_eq(create(vmsfd, VM_A, "../deb", base, 1 << 20,
	    real_overlay, NULL, &vd, text, sizeof(text)), EINVAL);
	cr_assert_str_empty(vms_listing());
	close(base);
}

static int
count_vm(const char *vm, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

Test(stored_disk, delete_follows_no_symlink)
{
	struct vm_disk	 vd;
	struct stat	 st;
	char		 text[DISK_TEXT_MAX], victim[PATH_MAX], outside[PATH_MAX];
	int		 base = open_base(NULL), n = 0, fd;

	cr_assert_eq(create(vmsfd, VM_A, "deb", base, 1 << 20,
	    real_overlay, NULL, &vd, text, sizeof(text)), 0, "%s", text);
	close(vd.fd);
	/* a file, a link to a file outside, and a nested directory */
	(void)snprintf(victim, sizeof(victim), "%s/victim", dir);
	cr_assert_neq(fd = open(victim, O_CREAT | O_WRONLY, 0600), -1);
	close(fd);
	(void)snprintf(outside, sizeof(outside), "%s/outside", dir);
	cr_assert_eq(mkdir(outside, 0700), 0);
	cr_assert_eq(symlinkat(victim, vmsfd, VM_A "/link"), 0);
	cr_assert_eq(symlinkat(outside, vmsfd, VM_A "/dirlink"), 0);
	cr_assert_eq(mkdirat(vmsfd, VM_A "/sub", 0700), 0);
	cr_assert_neq(fd = openat(vmsfd, VM_A "/sub/f", O_CREAT | O_WRONLY,
	    0600), -1);
	close(fd);
	/* a vm name that is a symlink to a directory outside */
	cr_assert_eq(symlinkat(outside, vmsfd, VM_B), 0);

	cr_assert_eq(disk_list(vmsfd, count_vm, &n), 1);
	cr_assert_eq(n, 1, "a symlink was listed as a vm");
	cr_assert_eq(disk_delete(vmsfd, VM_A, text, sizeof(text)), 0, "%s",
	    text);
	cr_assert_eq(fstatat(vmsfd, VM_A, &st, AT_SYMLINK_NOFOLLOW), -1);
	cr_assert_eq(stat(victim, &st), 0, "the link's target was removed");
	cr_assert_eq(stat(outside, &st), 0);
	cr_assert_eq(disk_delete(vmsfd, VM_A, text, sizeof(text)), ENOENT);
	cr_assert_neq(disk_delete(vmsfd, VM_B, text, sizeof(text)), 0);
	cr_assert_eq(stat(outside, &st), 0);
	close(base);
}

Test(stored_disk, foreign_qcow2_is_not_opened)
{
	struct vm_disk	 vd;
	char		 cmd[512], text[DISK_TEXT_MAX];

	cr_assert_eq(mkdirat(vmsfd, VM_A, 0700), 0);
	(void)snprintf(cmd, sizeof(cmd), "qemu-img create -q -f qcow2 -F raw "
	    "-b /etc/passwd -u '%s/vms/%s/%s' 1M", dir, VM_A, VM_DISK_QCOW2);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(disk_open(vmsfd, VM_A, &vd, text, sizeof(text)), EINVAL);
	cr_assert(strstr(text, "not an overlay stored made") != NULL, "%s",
	    text);
}

Test(stored_disk, qemuimg_failure_is_reported)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-f", "nosuchformat", "x.img",
		    "1M", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS, .fsize_max = 1 << 20,
	};
	char	 out[QEMUIMG_OUTPUT_MAX];

	spec.dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(qemuimg_run(&spec, -1, NULL, NULL, out, sizeof(out),
	    NULL, NULL), EIO);
	cr_assert(strstr(out, "nosuchformat") != NULL, "%s", out);
	cr_assert_null(strchr(out, '\n'));
	spec.argv[0] = "sh";
	cr_assert_eq(qemuimg_run(&spec, -1, NULL, NULL, out, sizeof(out),
	    NULL, NULL), EINVAL, "only qemu-img runs");
	close(spec.dirfd);
}

Test(stored_disk, qemuimg_output_is_bounded)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-f", "nosuchformat", "x.img",
		    "1M", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS, .fsize_max = 1 << 20,
	};
	char	 out[16];

	spec.dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(qemuimg_run(&spec, -1, NULL, NULL, out, sizeof(out),
	    NULL, NULL), EIO);
	cr_assert_leq(strlen(out), sizeof(out) - 1);
	close(spec.dirfd);
}

static uint32_t	 last_permille;

static void
note_progress(uint32_t permille, void *arg)
{
	last_permille = permille;
	(*(int *)arg)++;
}

Test(stored_disk, qemuimg_progress_and_stdout)
{
	struct qemuimg_spec	 spec = {
		.argv = { "qemu-img", "create", "-q", "-f", "raw", "src.raw",
		    "8M", NULL },
		.xfd = -1, .timeout_ms = QEMUIMG_QUICK_MS,
		.fsize_max = 64 << 20,
	};
	char	 text[QEMUIMG_OUTPUT_MAX], out[64];
	size_t	 outlen = sizeof(out);
	int	 calls = 0;

	spec.dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(qemuimg_run(&spec, -1, NULL, NULL, text, sizeof(text),
	    NULL, NULL), 0, "%s", text);
	/* -p's progress reaches the callback, ending at 100%. */
	spec.argv[1] = "convert";
	spec.argv[2] = "-p";
	spec.argv[3] = "-O";
	spec.argv[4] = "qcow2";
	spec.argv[5] = "src.raw";
	spec.argv[6] = "dst.qcow2";
	spec.argv[7] = NULL;
	spec.flags = QEMUIMG_PROGRESS;
	cr_assert_eq(qemuimg_run(&spec, -1, note_progress, &calls, text,
	    sizeof(text), NULL, NULL), 0, "%s", text);
	cr_assert_geq(calls, 1);
	cr_assert_eq(last_permille, 1000);
	/* stdout kept within its buffer, and more is EFBIG. */
	spec.argv[1] = "info";
	spec.argv[2] = "--output=json";
	spec.argv[3] = "dst.qcow2";
	spec.argv[4] = NULL;
	spec.flags = QEMUIMG_STDOUT;
	cr_assert_eq(qemuimg_run(&spec, -1, NULL, NULL, text, sizeof(text),
	    out, &outlen), EFBIG, "%s", text);
	cr_assert_eq(outlen, sizeof(out) - 1);
	cr_assert_eq(out[outlen], '\0');
	close(spec.dirfd);
}

/* A raw disk's state file is byte for byte what qemu-img makes. */
Test(stored_disk, state_file_is_qemu_imgs_empty_qcow2)
{
	char	 cmd[1024], ours[128], theirs[128];
	int	 fd;

	(void)snprintf(ours, sizeof(ours), "%s/ours.qcow2", dir);
	(void)snprintf(theirs, sizeof(theirs), "%s/theirs.qcow2", dir);
	fd = open(ours, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_neq(fd, -1);
	cr_assert_eq(disk_state_write(fd), 0);
	close(fd);
	(void)snprintf(cmd, sizeof(cmd), "qemu-img create -q -f qcow2 -o "
	    "compat=0.10 '%s' %d && cmp '%s' '%s' && qemu-img check -q '%s'",
	    theirs, QCOW2_STATE_BYTES, ours, theirs, ours);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* A snapshot's disk half of a VM without a disk, or a missing clone. */
Test(stored_disk, snapshot_clone_errors_are_said)
{
	char	 text[DISK_TEXT_MAX], path[128];
	int	 fd;

	cr_assert_eq(disk_snapshot(vmsfd, VM_A, SVS_SAVE, "one", text,
	    sizeof(text)), ENOENT);
	cr_assert_eq(disk_snapshot(vmsfd, VM_A, SVS_SAVE, "../x", text,
	    sizeof(text)), EINVAL);
	(void)snprintf(path, sizeof(path), "%s/vms/%s", dir, VM_A);
	cr_assert_eq(mkdir(path, 0700), 0);
	(void)snprintf(path, sizeof(path), "%s/vms/%s/%s", dir, VM_A,
	    VM_DISK_RAW);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_neq(fd, -1);
	close(fd);
	cr_assert_eq(disk_snapshot(vmsfd, VM_A, SVS_RESTORE, "one", text,
	    sizeof(text)), ENOENT);
	cr_assert(strstr(text, "its clone is missing") != NULL, "%s", text);
	cr_assert_eq(disk_snapshot(vmsfd, VM_A, SVS_DELETE, "one", text,
	    sizeof(text)), 0, "%s", text);
}
