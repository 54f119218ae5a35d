/*
 * The config grammar: a complete good file, defaults, macros and -D, and
 * bad files reported with their line numbers.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define CONF_DIR	"tests/unit/conf"

static struct mcvm_config	 conf;
static char			 tmp[] = "/tmp/mcvm-conf-XXXXXX";

/* Parses text written to a temporary file. */
static int
parse_text(const char *text)
{
	FILE	*fp;
	int	 fd, rc;

	strcpy(tmp, "/tmp/mcvm-conf-XXXXXX");
	cr_assert_neq(fd = mkstemp(tmp), -1);
	cr_assert_not_null(fp = fdopen(fd, "w"));
	fputs(text, fp);
	fclose(fp);
	config_defaults(&conf);
	rc = config_parse(tmp, &conf);
	unlink(tmp);
	return rc;
}

/* The error must name the file and this line. */
static void
assert_error_line(int line, const char *needle)
{
	char	 want[64];

	(void)snprintf(want, sizeof(want), ":%d: ", line);
	cr_assert_not_null(strstr(config_lasterror(), want),
	    "error \"%s\" lacks %s", config_lasterror(), want);
	cr_assert_not_null(strstr(config_lasterror(), needle),
	    "error \"%s\" lacks \"%s\"", config_lasterror(), needle);
	cr_assert_eq(strncmp(config_lasterror(), tmp, strlen(tmp)), 0);
}

Test(config, good_file)
{
	char	 a[INET6_ADDRSTRLEN];

	config_defaults(&conf);
	cr_assert_eq(config_parse(CONF_DIR "/good.conf", &conf), 0,
	    "%s", config_lasterror());
	cr_assert_str_eq(conf.statedir, "/var/lib/mcvm-test");
	cr_assert_str_eq(conf.rundir, "/run/mcvm-test");
	cr_assert_str_eq(conf.control_sock, "/run/mcvm-test/ctl.sock");
	cr_assert_str_eq(conf.control_group, "wheel");
	cr_assert_eq(conf.accel, ACCEL_TCG);
	cr_assert_eq(conf.vm_uid_first, 300000);
	cr_assert_eq(conf.vm_uid_last, 300999);
	cr_assert_eq(conf.nlisten, 3);
	cr_assert_str_eq(conf.listen[0].text, "127.0.0.1:8090");
	cr_assert_eq(conf.listen[1].ss.ss_family, AF_INET6);
	cr_assert(conf.listen[2].is_unix);
	cr_assert_eq(conf.body_limit, 2 << 20);
	cr_assert_eq(conf.header_limit, 32 << 10);
	cr_assert_eq(conf.max_connections, 64);
	cr_assert_eq(conf.idle_timeout, 15);
	cr_assert_eq(conf.request_timeout, 20);
	cr_assert_eq(conf.rate, 10);
	cr_assert_eq(conf.rate_burst, 30);
	cr_assert_eq(conf.peer_connections, 8);
	cr_assert_eq(conf.header_timeout, 4);
	cr_assert_eq(conf.unauth_rate, 2);
	cr_assert_eq(conf.unauth_burst, 7);
	cr_assert_eq(conf.nallow_host, 1);
	cr_assert_str_eq(conf.allow_origin[0], "http://localhost:8090");
	cr_assert_str_eq(conf.uplink, "eth0");
	cr_assert_eq(conf.pool.prefixlen, 16);
	cr_assert_str_eq(inet_ntop(AF_INET, conf.resolver.addr, a,
	    sizeof(a)), "203.0.113.53");
	cr_assert_eq(conf.nblocked, 2);
	cr_assert_eq(conf.blocked[1].family, AF_INET6);
	cr_assert_eq(conf.nforward_bind, 1);
	cr_assert_eq(conf.host_limits.max_vms, 8);
	cr_assert_eq(conf.host_limits.max_memory, 8ULL << 30);
	cr_assert_eq(conf.ws_limits.max_storage, 20ULL << 30);
	cr_assert_eq(conf.vm_memory, 1ULL << 30);
	cr_assert_eq(conf.vm_vcpus, 2);
	cr_assert_eq(conf.vm_idle_seconds, 600);
	cr_assert_eq(conf.vm_idle_mode, IDLE_PAUSE);
	cr_assert_eq(conf.nimages, 1);
	cr_assert_str_eq(conf.images[0].name, "debian");
	cr_assert_str_eq(conf.images[0].disk, "/srv/img/root.ext4");
	/* Digests are stored in lower case. */
	cr_assert_eq(conf.images[0].kernel_sha256[0], 'a');
}

static char	 image_dir[] = "/tmp/mcvm-image-XXXXXX";

/* Removes the made-up image's directory, whether the test passed or not. */
static void
image_dir_remove(void)
{
	char	 path[PATH_MAX];

	if (strchr(image_dir, 'X') != NULL)
		return;
	(void)snprintf(path, sizeof(path), "%s/manifest", image_dir);
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s/mcvm-image.conf", image_dir);
	(void)unlink(path);
	(void)rmdir(image_dir);
}

/*
 * The shipped configurations parse.  The development one includes the
 * image block etc/image-conf.sh writes from a built image's manifest;
 * here the script writes it from a manifest of made-up digests, so the
 * test needs no built image and checks the script's output too.
 */
Test(config, shipped_examples_parse, .fini = image_dir_remove)
{
	static const char	*sums[] = {
		"1a7ac0c40b10b98353b6f85fa9a0d4f2"
		    "703287979567e19629d35ad2d777d124",
		"4a4e2debfe77757a99b34563f2533ab7"
		    "cfd62e2a28787c940c781a97795ed0e8",
		"ff6445fd42ad0356fd4a161db764529f"
		    "210ab04c3c3bca2a8c429450058fca98"
	};
	char		 path[PATH_MAX], cmd[PATH_MAX * 2], def[PATH_MAX + 16];
	FILE		*fp;

	config_defaults(&conf);
	cr_assert_eq(config_parse("etc/mcvm.conf", &conf), 0, "%s",
	    config_lasterror());

	cr_assert_not_null(mkdtemp(image_dir));
	(void)snprintf(path, sizeof(path), "%s/manifest", image_dir);
	cr_assert_not_null(fp = fopen(path, "w"));
	fprintf(fp, "%s  vmlinuz\n%s  initrd.img\n%s  rootfs.ext4\n",
	    sums[0], sums[1], sums[2]);
	cr_assert_eq(fclose(fp), 0);
	(void)snprintf(path, sizeof(path), "%s/mcvm-image.conf", image_dir);
	(void)snprintf(cmd, sizeof(cmd), "etc/image-conf.sh %s debian > %s",
	    image_dir, path);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);

	config_clear_macros();
	(void)snprintf(def, sizeof(def), "images=%s", path);
	cr_assert_eq(config_define(def), 0);
	config_defaults(&conf);
	cr_assert_eq(config_parse("etc/mcvm.dev.conf", &conf), 0, "%s",
	    config_lasterror());
	config_clear_macros();
	cr_assert_str_eq(conf.statedir, "/tmp/mcvm-dev/state");
	cr_assert_str_eq(conf.listen[0].text, "127.0.0.1:8090");
	cr_assert_eq(conf.nimages, 1);
	cr_assert_str_eq(conf.images[0].name, "debian");
	(void)snprintf(path, sizeof(path), "%s/vmlinuz", image_dir);
	cr_assert_str_eq(conf.images[0].kernel, path);
	cr_assert_str_eq(conf.images[0].kernel_sha256, sums[0]);
	cr_assert_str_eq(conf.images[0].initrd_sha256, sums[1]);
	(void)snprintf(path, sizeof(path), "%s/rootfs.ext4", image_dir);
	cr_assert_str_eq(conf.images[0].disk, path);
	cr_assert_str_eq(conf.images[0].disk_sha256, sums[2]);
}

Test(config, empty_file_gets_defaults)
{
	cr_assert_eq(parse_text(""), 0);
	cr_assert_str_eq(conf.statedir, MCVM_STATEDIR_DEFAULT);
	cr_assert_str_eq(conf.control_sock, MCVM_RUNDIR_DEFAULT "/"
	    MCVM_CONTROL_SOCK);
	cr_assert_eq(conf.nlisten, 1);
	cr_assert_str_eq(conf.listen[0].text, LISTEN_DEFAULT);
	cr_assert_str_eq(conf.frontd_user, FRONTD_USER_DEFAULT);
	cr_assert_eq(conf.vm_memory, VM_MEMORY_DEFAULT);
	cr_assert_eq(conf.accel, ACCEL_AUTO);
	cr_assert_eq(conf.shared_templates, 1);
	cr_assert_eq(conf.warm_clones, WARM_CLONES_DEFAULT);
}

Test(config, warm)
{
	cr_assert_eq(parse_text("warm 0\n"), 0);
	cr_assert_eq(conf.warm_clones, 0);
	cr_assert_eq(parse_text("warm 4\n"), 0);
	cr_assert_eq(conf.warm_clones, 4);
	cr_assert_eq(parse_text("warm 5\n"), -1);
	cr_assert_eq(parse_text("warm -1\n"), -1);
	cr_assert_eq(parse_text("warm\n"), -1);
}

Test(config, templates)
{
	cr_assert_eq(parse_text("templates stream\n"), 0);
	cr_assert_eq(conf.shared_templates, 0);
	cr_assert_eq(parse_text("templates shared\n"), 0);
	cr_assert_eq(conf.shared_templates, 1);
	cr_assert_eq(parse_text("templates some\n"), -1);
}

Test(config, comments_and_continuations)
{
	cr_assert_eq(parse_text("# comment\n\nstate \\\n directory "
	    "\"/a\" # trailing\n"), 0, "%s", config_lasterror());
	cr_assert_str_eq(conf.statedir, "/a");
}

/* -D wins over the file's own assignment; the file's is the default. */
Test(config, define_overrides_file)
{
	cr_assert_eq(config_define("dir=/from/cmdline"), 0);
	cr_assert_eq(parse_text("dir = \"/from/file\"\nstate directory "
	    "$dir\n"), 0);
	cr_assert_str_eq(conf.statedir, "/from/cmdline");
	config_clear_macros();
	cr_assert_eq(parse_text("dir = \"/from/file\"\nstate directory "
	    "$dir\n"), 0);
	cr_assert_str_eq(conf.statedir, "/from/file");
}

/* Keywords may name macros: the dev config uses listen = ... */
Test(config, keyword_as_macro_name)
{
	cr_assert_eq(parse_text("listen = \"127.0.0.1:9\"\n"
	    "frontd {\n listen on $listen\n}\n"), 0, "%s",
	    config_lasterror());
	cr_assert_str_eq(conf.listen[0].text, "127.0.0.1:9");
}

Test(config, define_rejects_bad_names)
{
	cr_assert_eq(config_define("=x"), -1);
	cr_assert_eq(config_define("noequals"), -1);
	cr_assert_eq(config_define("bad-name=x"), -1);
}

Test(config, undefined_macro)
{
	cr_assert_eq(parse_text("\n\nstate directory $nope\n"), -1);
	assert_error_line(3, "macro 'nope' not defined");
}

Test(config, syntax_error_line)
{
	cr_assert_eq(parse_text("accel auto\n\n\naccel warp\n"), -1);
	assert_error_line(4, "syntax error");
}

Test(config, relative_path)
{
	cr_assert_eq(parse_text("accel kvm\nstate directory \"rel\"\n"), -1);
	assert_error_line(2, "absolute path");
}

Test(config, bad_listen_address)
{
	cr_assert_eq(parse_text("frontd {\n\tlisten on \"localhost:80\"\n}\n"),
	    -1);
	assert_error_line(2, "invalid listen address");
}

Test(config, bad_size)
{
	cr_assert_eq(parse_text("frontd {\n body limit 12Q\n}\n"), -1);
	assert_error_line(2, "invalid size");
}

Test(config, size_out_of_range)
{
	cr_assert_eq(parse_text("vm defaults {\n\n memory 64K\n}\n"), -1);
	assert_error_line(3, "vm memory must be");
}

Test(config, vcpu_limits)
{
	cr_assert_eq(parse_text(""), 0);
	cr_assert_eq(conf.vm_vcpus_limit, 0, "default: the host's CPUs");
	cr_assert_eq(conf.host_limits.max_vcpus, HOST_MAX_VCPUS_DEFAULT);
	cr_assert_eq(conf.ws_limits.max_vcpus, WS_MAX_VCPUS_DEFAULT);
	cr_assert_eq(parse_text("limits {\n vcpus 12\n}\n"
	    "workspace limits {\n vcpus 3\n}\n"
	    "vm defaults {\n vcpus 2\n vcpus limit 4\n}\n"), 0, "%s",
	    config_lasterror());
	cr_assert_eq(conf.host_limits.max_vcpus, 12);
	cr_assert_eq(conf.ws_limits.max_vcpus, 3);
	cr_assert_eq(conf.vm_vcpus, 2);
	cr_assert_eq(conf.vm_vcpus_limit, 4);
	cr_assert_eq(parse_text("vm defaults {\n vcpus limit 0\n}\n"), -1);
	assert_error_line(2, "vcpus limit must be 1 to");
	cr_assert_eq(parse_text("vm defaults {\n\n vcpus limit 65\n}\n"), -1);
	assert_error_line(3, "vcpus limit must be 1 to");
	cr_assert_eq(parse_text("workspace limits {\n vcpus 0\n}\n"), -1);
	assert_error_line(2, "vcpus must be 1 to");
}

Test(config, bad_uid_range)
{
	cr_assert_eq(parse_text("vm uids 5000 to 4000\n"), -1);
	assert_error_line(1, "vm uids");
}

Test(config, bad_cidr_host_bits)
{
	cr_assert_eq(parse_text("netd {\n block \"10.0.0.1/8\"\n}\n"), -1);
	assert_error_line(2, "cannot block");
}

Test(config, bad_sha256)
{
	cr_assert_eq(parse_text("image \"x\" {\n kernel \"/k\" sha256 \"abc\"\n"
	    "}\n"), -1);
	assert_error_line(2, "sha256");
}

Test(config, image_needs_kernel_and_disk)
{
	cr_assert_eq(parse_text("image \"x\" {\n}\n"), -1);
	cr_assert_not_null(strstr(config_lasterror(), "needs a kernel"));
}

Test(config, duplicate_image)
{
	cr_assert_eq(parse_text(
	    "image \"x\" {\n kernel \"/k\" sha256 \"" \
	    "0000000000000000000000000000000000000000000000000000000000000000"
	    "\"\n disk \"/d\" sha256 \""
	    "0000000000000000000000000000000000000000000000000000000000000000"
	    "\"\n}\nimage \"x\" {\n}\n"), -1);
	assert_error_line(5, "defined twice");
}

Test(config, unterminated_string)
{
	cr_assert_eq(parse_text("accel auto\nstate directory \"/abc\n"), -1);
	assert_error_line(2, "unterminated");
}

Test(config, bad_character)
{
	cr_assert_eq(parse_text("accel auto\naccel ;tcg\n"), -1);
	assert_error_line(2, "unexpected character");
}

Test(config, negative_number)
{
	cr_assert_eq(parse_text("frontd {\n connections -5\n}\n"), -1);
	assert_error_line(2, "negative");
}

Test(config, frontd_peer_limits_bounded)
{
	cr_assert_eq(parse_text("frontd {\n peer connections 0\n}\n"), -1);
	assert_error_line(2, "peer connections");
	cr_assert_eq(parse_text("frontd {\n header timeout 0\n}\n"), -1);
	assert_error_line(2, "header timeout");
	cr_assert_eq(parse_text("frontd {\n unauthenticated rate 5 burst 4\n"
	    "}\n"), -1);
	assert_error_line(2, "unauthenticated rate");
	config_defaults(&conf);
	cr_assert_eq(conf.peer_connections, PEER_CONNECTIONS_DEFAULT);
	cr_assert_eq(conf.header_timeout, HEADER_TIMEOUT_DEFAULT);
	cr_assert_eq(conf.unauth_rate, UNAUTH_RATE_DEFAULT);
}

Test(config, same_user_twice)
{
	cr_assert_eq(parse_text("frontd {\n user \"x\"\n}\n"
	    "stored {\n user \"x\"\n}\n"), -1);
	cr_assert_not_null(strstr(config_lasterror(), "different users"));
}

Test(config, include_relative)
{
	config_defaults(&conf);
	cr_assert_eq(config_parse(CONF_DIR "/inc-main.conf", &conf), 0, "%s",
	    config_lasterror());
	cr_assert_eq(conf.accel, ACCEL_TCG);
	cr_assert_eq(conf.vm_vcpus, 3);
	cr_assert_eq(conf.max_connections, 7);
}

/* An error in an included file names that file and its line. */
Test(config, include_error_names_the_file)
{
	char	 cwd[PATH_MAX], text[PATH_MAX + 64];

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	snprintf(text, sizeof(text), "accel auto\ninclude \"%s/" CONF_DIR
	    "/inc-bad.conf\"\n", cwd);
	cr_assert_eq(parse_text(text), -1);
	cr_assert_not_null(strstr(config_lasterror(), "inc-bad.conf:4: "),
	    "%s", config_lasterror());
}

Test(config, include_missing)
{
	cr_assert_eq(parse_text("\ninclude \"/nonexistent.conf\"\n"), -1);
	assert_error_line(2, "/nonexistent.conf: No such file");
}

Test(config, include_loop_is_bounded)
{
	char	 self[64];
	FILE	*fp;

	(void)snprintf(self, sizeof(self), "/tmp/mcvm-conf-loop-%d",
	    (int)getpid());
	cr_assert_not_null(fp = fopen(self, "w"));
	fprintf(fp, "include \"%s\"\n", self);
	fclose(fp);
	config_defaults(&conf);
	cr_assert_eq(config_parse(self, &conf), -1);
	unlink(self);
	cr_assert_not_null(strstr(config_lasterror(), "nested too deep"));
}

Test(config, missing_file)
{
	config_defaults(&conf);
	cr_assert_eq(config_parse("/nonexistent/mcvm.conf", &conf), -1);
	cr_assert_not_null(strstr(config_lasterror(), "No such file"));
}

Test(config, size_parse)
{
	uint64_t	 v;

	cr_assert_eq(size_parse("512", &v), 0);
	cr_assert_eq(v, 512);
	cr_assert_eq(size_parse("4k", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(size_parse("2GB", &v), 0);
	cr_assert_eq(v, 2ULL << 30);
	cr_assert_eq(size_parse("1T", &v), 0);
	cr_assert_eq(size_parse("", &v), -1);
	cr_assert_eq(size_parse("M", &v), -1);
	cr_assert_eq(size_parse("5X", &v), -1);
	cr_assert_eq(size_parse("5MBB", &v), -1);
	cr_assert_eq(size_parse("99999999999999999999", &v), -1);
	cr_assert_eq(size_parse("17179869184G", &v), -1);
}

Test(config, limit_parse)
{
	uint64_t	 v = 1;
	char		 why[160];

	cr_assert_eq(limit_parse(LIMIT_VMS, "3", &v, why, sizeof(why)), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(limit_parse(LIMIT_MEMORY, "2G", &v, why, sizeof(why)),
	    0);
	cr_assert_eq(v, 2ULL << 30);
	cr_assert_eq(limit_parse(LIMIT_STORAGE, "512mb", &v, why,
	    sizeof(why)), 0);
	cr_assert_eq(v, 512ULL << 20);
	cr_assert_eq(limit_parse(LIMIT_VCPUS, "default", &v, why,
	    sizeof(why)), 0);
	cr_assert_eq(v, 0);

	/* The config's bounds. */
	cr_assert_eq(limit_parse(LIMIT_VMS, "0", &v, why, sizeof(why)), -1);
	cr_assert_not_null(strstr(why, "vms must be 1 to 4096"));
	cr_assert_eq(limit_parse(LIMIT_VMS, "4097", &v, why, sizeof(why)),
	    -1);
	cr_assert_eq(limit_parse(LIMIT_VCPUS, "65537", &v, why, sizeof(why)),
	    -1);
	cr_assert_eq(limit_parse(LIMIT_MEMORY, "127M", &v, why, sizeof(why)),
	    -1);
	cr_assert_not_null(strstr(why, "128M"));
	cr_assert_eq(limit_parse(LIMIT_MEMORY, "128M", &v, why, sizeof(why)),
	    0);
	cr_assert_eq(limit_parse(LIMIT_STORAGE, "1023K", &v, why,
	    sizeof(why)), -1);
	cr_assert_eq(limit_parse(LIMIT_STORAGE, "8388608T", &v, why,
	    sizeof(why)), -1);

	/* Counts have no suffix, sizes no sign. */
	cr_assert_eq(limit_parse(LIMIT_VMS, "2K", &v, why, sizeof(why)), -1);
	cr_assert_eq(limit_parse(LIMIT_VMS, "-1", &v, why, sizeof(why)), -1);
	cr_assert_eq(limit_parse(LIMIT_VMS, "", &v, why, sizeof(why)), -1);
	cr_assert_eq(limit_parse(LIMIT_MEMORY, "-2G", &v, why, sizeof(why)),
	    -1);
	cr_assert_eq(limit_parse(LIMIT_MEMORY, "2Q", &v, why, sizeof(why)),
	    -1);
	cr_assert_eq(limit_parse(LIMIT_VCPUS, "99999999999999999999", &v, why,
	    sizeof(why)), -1);
	cr_assert_eq(v, 128ULL << 20, "a refused value leaves out alone");
}

/* The limits block refuses what set-quota refuses, in the same words. */
Test(config, limits_bounds)
{
	cr_assert_eq(parse_text("workspace limits {\n vms 0\n}\n"), -1);
	assert_error_line(2, "vms must be 1 to 4096");
	cr_assert_eq(parse_text("workspace limits {\n memory 64M\n}\n"),
	    -1);
	assert_error_line(2, "memory limit must be 128M");
	cr_assert_eq(parse_text("workspace limits {\n storage 4K\n}\n"),
	    -1);
	assert_error_line(2, "storage limit must be 1M");
}

Test(config, listen_addr_parse)
{
	struct listen_addr	 la;

	cr_assert_eq(listen_addr_parse("127.0.0.1:8090", &la), 0);
	cr_assert_eq(listen_addr_parse("[::1]:1", &la), 0);
	cr_assert_eq(listen_addr_parse("/run/x.sock", &la), 0);
	cr_assert(la.is_unix);
	cr_assert_eq(listen_addr_parse("127.0.0.1", &la), -1);
	cr_assert_eq(listen_addr_parse("127.0.0.1:0", &la), -1);
	cr_assert_eq(listen_addr_parse("127.0.0.1:65536", &la), -1);
	cr_assert_eq(listen_addr_parse("::1:80", &la), -1);
	cr_assert_eq(listen_addr_parse("[::1:80", &la), -1);
	cr_assert_eq(listen_addr_parse(":80", &la), -1);
	cr_assert_eq(listen_addr_parse("host:80", &la), -1);
}
