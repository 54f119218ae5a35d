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
	cr_assert(has_pair(&qa, "-incoming", "defer"));
	cr_assert_not(has_word(&qa, "-S"));
	cr_assert_not(has_word(&qa, "-object"));
	/* The kernel is in the checkpoint; the ROM -kernel adds is not. */
	cr_assert_not(has_word(&qa, "-kernel"));
	cr_assert_not(has_word(&qa, "-append"));
	cr_assert(has_pair(&qa, "-option-rom", "linuxboot_dma.bin"));
	/* The same machine as the template: only the start differs. */
	cr_assert(has_word(&qa, "virtserialport,chardev=agent,id=agent0,"
	    "name=org.mcvm.agent.0"));
}

Test(qemu, argv_ram_file)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	/* Only a restored VM maps a template's RAM. */
	s.ram = QEMU_RAM_PRIVATE;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.restore = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-object", "memory-backend-file,id=pc.ram,"
	    "size=512M,mem-path=/ram,share=off"));
	cr_assert(has_pair(&qa, "-machine", "q35,memory-backend=pc.ram"));
	cr_assert(has_pair(&qa, "-m", "512"));
	s.ram = QEMU_RAM_SHARED;
	s.paused = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-object", "memory-backend-file,id=pc.ram,"
	    "size=512M,mem-path=/ram,share=on"));
	cr_assert(has_word(&qa, "-S"));
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

/* An install from the CD onto one empty raw disk, by BIOS on q35. */
Test(qemu, argv_own_disks_install_bios)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	s.ndisks = 1;
	s.disks[0].format = IMG_RAW;
	s.cd = 1;
	s.display = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	/* No kernel: the firmware boots the CD, then the disk. */
	cr_assert_not(has_word(&qa, "-kernel"));
	cr_assert_not(has_word(&qa, "-initrd"));
	cr_assert_not(has_word(&qa, "-append"));
	cr_assert_not(has_word(&qa, "pflash"));
	cr_assert(has_pair(&qa, "-machine", "q35"));
	cr_assert(has_word(&qa, "-no-reboot"));
	cr_assert(has_word(&qa, "-no-shutdown"));
	cr_assert(has_pair(&qa, "-add-fd", "fd=9,set=20"));
	cr_assert(has_pair(&qa, "-blockdev", "driver=raw,node-name=cd,"
	    "read-only=on,file.driver=file,file.filename=/dev/fdset/20"));
	cr_assert(has_pair(&qa, "-device", "ide-cd,drive=cd,bootindex=0"));
	cr_assert(has_pair(&qa, "-add-fd", "fd=5,set=10"));
	cr_assert(has_pair(&qa, "-blockdev", "driver=raw,node-name=disk0,"
	    "file.driver=file,file.filename=/dev/fdset/10"));
	cr_assert(has_pair(&qa, "-device",
	    "virtio-blk-pci,drive=disk0,bootindex=1"));
	/* Not the catalog disk's nodes. */
	cr_assert_not(has_word(&qa, "drive=disk,"));
	cr_assert_not(has_word(&qa, "/dev/fdset/1,"));
	cr_assert(has_pair(&qa, "-device", "VGA"));
	/* qemu-guest-agent's port, not mcvm's: the monitor reads it. */
	cr_assert(has_word(&qa, "virtserialport,chardev=agent,id=agent0,"
	    "name=org.qemu.guest_agent.0"));
	cr_assert_not(has_word(&qa, "org.mcvm.agent.0"));
}

/* Once installed: the disks alone, from the first. */
Test(qemu, argv_own_disks_after_install)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	s.ndisks = 2;
	s.disks[0].format = IMG_RAW;
	s.disks[1].format = IMG_QCOW2;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert_not(has_word(&qa, "ide-cd"));
	cr_assert_not(has_word(&qa, "set=20"));
	cr_assert(has_word(&qa, "-no-shutdown"));
	cr_assert(has_pair(&qa, "-device",
	    "virtio-blk-pci,drive=disk0,bootindex=0"));
	cr_assert(has_pair(&qa, "-device",
	    "virtio-blk-pci,drive=disk1,bootindex=1"));
	cr_assert(has_pair(&qa, "-add-fd", "fd=12,set=12"));
	cr_assert(has_pair(&qa, "-blockdev", "driver=qcow2,node-name=disk1,"
	    "file.driver=file,file.filename=/dev/fdset/12"));
}

/* Overlays on their bases, four disks, UEFI on pc. */
Test(qemu, argv_own_disks_overlays_uefi_pc)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;
	char			 want[QEMU_ARG_MAX];
	unsigned int		 i;

	s.ndisks = VM_DISKS_MAX;
	for (i = 0; i < VM_DISKS_MAX; i++) {
		s.disks[i].format = IMG_QCOW2;
		s.disks[i].has_base = 1;
		s.disks[i].base_format = i % 2 ? IMG_QCOW2 : IMG_RAW;
	}
	s.cd = 1;
	s.firmware = FW_UEFI;
	s.machine = MACH_PC;
	s.display = 1;
	s.mac = "52:54:00:12:34:56";
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	cr_assert(has_pair(&qa, "-machine", "pc,pflash0=code,pflash1=vars"));
	cr_assert(has_pair(&qa, "-add-fd", "fd=10,set=21"));
	cr_assert(has_pair(&qa, "-add-fd", "fd=11,set=22"));
	cr_assert(has_pair(&qa, "-blockdev", "driver=raw,node-name=code,"
	    "read-only=on,file.driver=file,file.filename=/dev/fdset/21"));
	cr_assert(has_pair(&qa, "-blockdev", "driver=raw,node-name=vars,"
	    "file.driver=file,file.filename=/dev/fdset/22"));
	for (i = 0; i < VM_DISKS_MAX; i++) {
		(void)snprintf(want, sizeof(want), "fd=%d,set=%u",
		    QEMU_FD_DISK_N(i), 10 + 2 * i);
		cr_assert(has_pair(&qa, "-add-fd", want), "%s", want);
		(void)snprintf(want, sizeof(want), "fd=%d,set=%u",
		    QEMU_FD_BASE_N(i), 11 + 2 * i);
		cr_assert(has_pair(&qa, "-add-fd", want), "%s", want);
		(void)snprintf(want, sizeof(want), "driver=%s,"
		    "node-name=base%u,read-only=on,file.driver=file,"
		    "file.filename=/dev/fdset/%u", i % 2 ? "qcow2" : "raw", i,
		    11 + 2 * i);
		cr_assert(has_pair(&qa, "-blockdev", want), "%s", want);
		(void)snprintf(want, sizeof(want), "driver=qcow2,"
		    "node-name=disk%u,backing=base%u,file.driver=file,"
		    "file.filename=/dev/fdset/%u", i, i, 10 + 2 * i);
		cr_assert(has_pair(&qa, "-blockdev", want), "%s", want);
		(void)snprintf(want, sizeof(want), "virtio-blk-pci,"
		    "drive=disk%u,bootindex=%u", i, i + 1);
		cr_assert(has_pair(&qa, "-device", want), "%s", want);
	}
	/* Every fd QEMU is given is a distinct one of the jail's. */
	cr_assert_eq(QEMU_FD_BASE_N(VM_DISKS_MAX - 1) + 1, QEMU_FD_STATE);
	cr_assert_eq(QEMU_FD_STATE, QEMU_FD_MAX);
	cr_assert_gt(QEMU_FD_DISK_N(1), QEMU_FD_VARS);
	cr_assert(has_word(&qa, "virtio-net-pci"));
}

Test(qemu, argv_own_disks_refuses_bad_values)
{
	static struct qemu_argv	 qa;
	struct qemu_spec	 s = spec_ok;

	/* CD, firmware and machine belong to own disks only. */
	s.cd = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.firmware = FW_UEFI;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.machine = MACH_PC;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.ndisks = VM_DISKS_MAX + 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s = spec_ok;
	s.ndisks = 1;
	s.disks[0].format = IMG_VMDK;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.disks[0].format = IMG_RAW;
	s.disks[0].has_base = 1;	/* a raw disk has no base */
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.disks[0].format = IMG_QCOW2;
	s.disks[0].base_format = IMG_ISO;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.disks[0].base_format = IMG_RAW;
	cr_assert_eq(qemu_build_argv(&s, &qa), 0);
	/* Never from a template's checkpoint. */
	s.restore = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.restore = 0;
	s.hold = 1;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.hold = 0;
	s.firmware = 2;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
	s.firmware = FW_BIOS;
	s.machine = 2;
	cr_assert_eq(qemu_build_argv(&s, &qa), -1);
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
