/*
 * QEMU command lines and the choice of accelerator.
 */
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu.h"

Test(qemu, escape_doubles_commas)
{
	char	 out[32];

	cr_assert_eq(qemu_escape("plain", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "plain");
	cr_assert_eq(qemu_escape("a,b,,c", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "a,,b,,,,c");
	cr_assert_eq(qemu_escape("data,readonly=on.qcow2", out, sizeof(out)),
	    0);
	cr_assert_str_eq(out, "data,,readonly=on.qcow2");
	/* Too small for the escaped form: refused, not cut. */
	cr_assert_eq(qemu_escape("a,b", out, 4), -1);
	cr_assert_eq(qemu_escape("a,b", out, 5), 0);
}

static const struct qemu_spec spec_ok = {
	.vm_id = "vm-0123456789abcdef",
	.accel = ACCEL_USE_TCG,
	.memory_mib = 512,
	.vcpus = 2,
	.disk_format = DISK_QCOW2,
	.has_initrd = 1,
};

static int
has_pair(const struct qemu_argv *qa, const char *opt, const char *val)
{
	size_t	 i;

	for (i = 0; i + 1 < qa->argc; i++)
		if (strcmp(qa->argv[i], opt) == 0 &&
		    strcmp(qa->argv[i + 1], val) == 0)
			return 1;
	return 0;
}

static int
has_word(const struct qemu_argv *qa, const char *needle)
{
	size_t	 i;

	for (i = 0; i < qa->argc; i++)
		if (strstr(qa->argv[i], needle) != NULL)
			return 1;
	return 0;
}

Test(qemu, argv_is_confined)
{
	static struct qemu_argv	 qa;
	char			 accel[32];

	cr_assert_eq(qemu_build_argv(&spec_ok, &qa), 0);
	cr_assert_str_eq(qa.argv[0], QEMU_BIN);
	cr_assert_null(qa.argv[qa.argc]);
	cr_assert(has_pair(&qa, "-sandbox", "on,obsolete=deny,"
	    "elevateprivileges=deny,spawn=deny,resourcecontrol=deny"));
	cr_assert(has_word(&qa, "-nodefaults"));
	cr_assert(has_word(&qa, "-no-user-config"));
	cr_assert(has_pair(&qa, "-nic", "none"));
	(void)snprintf(accel, sizeof(accel), "tcg,tb-size=%u",
	    QEMU_TCG_TB_MIB);
	cr_assert(has_pair(&qa, "-accel", accel));
	cr_assert(has_pair(&qa, "-append", AGENT_KERNEL_APPEND_TCG));
	cr_assert_not(has_word(&qa, "-incoming"));
	cr_assert(has_pair(&qa, "-m", "512"));
	cr_assert(has_pair(&qa, "-smp", "2"));
	cr_assert(has_pair(&qa, "-kernel", QEMU_JAIL_KERNEL));
	cr_assert(has_pair(&qa, "-initrd", QEMU_JAIL_INITRD));
	cr_assert(has_pair(&qa, "-name", "guest=vm-0123456789abcdef"));
	/* Disks are fd sets, and the overlay's base is an explicit node. */
	cr_assert(has_word(&qa, "backing=base"));
	cr_assert(has_word(&qa, "file.filename=/dev/fdset/1"));
	cr_assert(has_word(&qa, "file.filename=/dev/fdset/2"));
	cr_assert(has_word(&qa, "name=org.mcvm.agent.0"));
	/* No host path at all, and no escape hatch. */
	cr_assert_not(has_word(&qa, "/var/"));
	cr_assert_not(has_word(&qa, "/tmp"));
	cr_assert_not(has_word(&qa, "-runas"));
	cr_assert_not(has_word(&qa, "-chroot"));
}

Test(qemu, argv_template_and_restore)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	s.hold = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-append", AGENT_KERNEL_APPEND_TCG
	    " mcvm.hold"));
	s.tsc_khz = 2445402;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-append", AGENT_KERNEL_APPEND_TCG
	    " tsc_early_khz=2445402 tsc=reliable mcvm.hold"));
	s.tsc_khz = 0;
	cr_assert_not(has_word(&qa, "-incoming"));
	s.hold = 0;
	s.restore = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-incoming", "fd:8"));
	/* The kernel is in the checkpoint; the ROM -kernel adds is not. */
	cr_assert_not(has_word(&qa, "-kernel"));
	cr_assert_not(has_word(&qa, "-append"));
	cr_assert(has_pair(&qa, "-option-rom", "linuxboot_dma.bin"));
	/* The same machine as the template: only the start differs. */
	cr_assert(has_word(&qa, "virtserialport,chardev=agent,id=agent0,"
	    "name=org.mcvm.agent.0"));
}

Test(qemu, argv_raw_disk_and_kvm)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	s.disk_format = DISK_RAW;
	s.accel = ACCEL_USE_KVM;
	s.has_initrd = 0;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-accel", "kvm"));
	cr_assert(has_pair(&qa, "-cpu", "host"));
	cr_assert(has_pair(&qa, "-append", AGENT_KERNEL_APPEND));
	cr_assert_not(has_word(&qa, "backing="));
	cr_assert_not(has_word(&qa, "/dev/fdset/2"));
	cr_assert_not(has_word(&qa, "-initrd"));
}

Test(qemu, argv_with_a_nic)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-nic", "none"));
	s.mac = "52:54:00:6d:00:07";
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert_not(has_pair(&qa, "-nic", "none"));
	cr_assert(has_pair(&qa, "-netdev", "tap,id=net0,fd=7"));
	cr_assert(has_pair(&qa, "-device",
	    "virtio-net-pci,netdev=net0,mac=52:54:00:6d:00:07"));
}

Test(qemu, argv_display_profile)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	/* The serial console is QEMU's ring, with or without a display. */
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-chardev", "ringbuf,id=serial0,size=256K"));
	cr_assert(has_pair(&qa, "-serial", "chardev:serial0"));
	cr_assert_not(has_pair(&qa, "-device", "VGA"));
	cr_assert_not(has_word(&qa, "virtio-tablet"));
	s.display = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-device", "VGA"));
	cr_assert(has_pair(&qa, "-device", "virtio-tablet-pci"));
	cr_assert(has_pair(&qa, "-device", "virtio-mouse-pci"));
	cr_assert(has_pair(&qa, "-serial", "chardev:serial0"));
}

Test(qemu, mac_validation)
{
	cr_assert(qemu_valid_mac("52:54:00:6d:00:07"));
	cr_assert_not(qemu_valid_mac("53:54:00:6d:00:07"));	/* multicast */
	cr_assert_not(qemu_valid_mac("52:54:00:6D:00:07"));
	cr_assert_not(qemu_valid_mac("52:54:00:6d:00"));
	cr_assert_not(qemu_valid_mac("52-54-00-6d-00-07"));
	cr_assert_not(qemu_valid_mac("52:54:00:6d:00:07,x=y"));
}

Test(qemu, argv_refuses_bad_values)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	s.vm_id = "vm-x,file=/etc/passwd";
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.memory_mib = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.vcpus = 0;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.mac = "52:54:00:00:00:01,script=/bin/sh";
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
}

/* A fake /dev and /sys under a temporary root. */
static char	 root[64];

static void
fake_root(int kvm, int pvm)
{
	char	 p[128];
	int	 fd;

	strcpy(root, "/tmp/mcvm-accel-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/dev", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sys", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sys/module", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	if (kvm) {
		snprintf(p, sizeof(p), "%s/dev/kvm", root);
		cr_assert_neq(fd = open(p, O_CREAT | O_RDWR, 0600), -1);
		close(fd);
	}
	if (pvm) {
		snprintf(p, sizeof(p), "%s/sys/module/kvm_pvm", root);
		cr_assert_eq(mkdir(p, 0755), 0);
	}
}

static void
fake_root_rm(void)
{
	char	 cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

Test(accel, auto_uses_kvm_where_it_works)
{
	char	 why[256];

	fake_root(1, 0);
	cr_assert_eq(accel_choose(ACCEL_AUTO, root, why, sizeof(why)),
	    ACCEL_USE_KVM);
	fake_root_rm();
}

Test(accel, auto_falls_back_on_a_nested_pvm_host)
{
	char	 why[256];

	fake_root(1, 1);
	cr_assert_eq(accel_choose(ACCEL_AUTO, root, why, sizeof(why)),
	    ACCEL_USE_TCG);
	cr_assert_not_null(strstr(why, "kvm_pvm"), "%s", why);
	fake_root_rm();
}

Test(accel, auto_without_kvm_uses_tcg)
{
	char	 why[256];

	fake_root(0, 0);
	cr_assert_eq(accel_choose(ACCEL_AUTO, root, why, sizeof(why)),
	    ACCEL_USE_TCG);
	fake_root_rm();
}

Test(accel, configured_modes_are_obeyed)
{
	char	 why[256];

	cr_assert_eq(accel_choose(ACCEL_TCG, "/nonexistent", why,
	    sizeof(why)), ACCEL_USE_TCG);
	cr_assert_eq(accel_choose(ACCEL_KVM, "/nonexistent", why,
	    sizeof(why)), ACCEL_USE_KVM);
}
