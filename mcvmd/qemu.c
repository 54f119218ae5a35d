/*
 * QEMU command lines.  Every value comes from mcvmd's own validated state
 * (ids it made, numbers it range-checked, fixed strings), and every string
 * value is escaped all the same: QEMU splits option values at commas, so a
 * comma is doubled.  Nothing a user typed reaches this file unvalidated,
 * and no host path does at all: disks are fds, the kernel and initrd are
 * bound into QEMU's jail (see jail.c).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "qemu.h"
#include "validate.h"

/* Doubles every comma.  Returns 0, or -1 if out is too small. */
int
qemu_escape(const char *in, char *out, size_t outlen)
{
	size_t	 o = 0;

	for (; *in != '\0'; in++) {
		if (o + (*in == ',' ? 2 : 1) >= outlen)
			return -1;
		out[o++] = *in;
		if (*in == ',')
			out[o++] = ',';
	}
	if (o >= outlen)
		return -1;
	out[o] = '\0';
	return 0;
}

/* "xx:xx:xx:xx:xx:xx", lower-case hex, unicast. */
int
qemu_valid_mac(const char *mac)
{
	size_t	 i;

	if (strlen(mac) != QEMU_MAC_LEN)
		return 0;
	for (i = 0; i < QEMU_MAC_LEN; i++) {
		if (i % 3 == 2) {
			if (mac[i] != ':')
				return 0;
		} else if (!((mac[i] >= '0' && mac[i] <= '9') ||
		    (mac[i] >= 'a' && mac[i] <= 'f')))
			return 0;
	}
	/* The low bit of the first octet marks multicast. */
	return ((mac[1] >= 'a' ? mac[1] - 'a' + 10 : mac[1] - '0') & 1) == 0;
}

static int
arg_add(struct qemu_argv *qa, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
arg_add(struct qemu_argv *qa, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (qa->argc == QEMU_ARGV_MAX)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(qa->buf[qa->argc], QEMU_ARG_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= QEMU_ARG_MAX)
		return -1;
	qa->argv[qa->argc] = qa->buf[qa->argc];
	qa->argc++;
	qa->argv[qa->argc] = NULL;
	return 0;
}

static const char *
qemu_driver(enum image_format f)
{
	return f == IMG_QCOW2 ? "qcow2" : "raw";
}

/*
 * A VM from its own disks: its firmware (SeaBIOS, or OVMF from flash),
 * the install CD first when it has one, then its disks in order, each
 * on its fds.  fdset 10 + 2i is disk i, 11 + 2i its base, 20 the CD,
 * 21 and 22 the firmware's code and variables.
 */
static int
own_disks(const struct qemu_spec *s, struct qemu_argv *qa)
{
	const struct qemu_disk	*d;
	unsigned int		 i, boot = 0;
	int			 rc = 0;

	if (s->firmware == FW_UEFI) {
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=21", QEMU_FD_CODE);
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=22", QEMU_FD_VARS);
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=raw,node-name=code,read-only=on,"
		    "file.driver=file,file.filename=/dev/fdset/21");
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=raw,node-name=vars,"
		    "file.driver=file,file.filename=/dev/fdset/22");
	}
	if (s->cd) {
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=20", QEMU_FD_CD);
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=raw,node-name=cd,read-only=on,"
		    "file.driver=file,file.filename=/dev/fdset/20");
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "ide-cd,drive=cd,bootindex=%u", boot++);
	}
	for (i = 0; i < s->ndisks; i++) {
		d = &s->disks[i];
		if ((d->format != IMG_QCOW2 && d->format != IMG_RAW) ||
		    (d->has_base && (d->format != IMG_QCOW2 ||
		    (d->base_format != IMG_QCOW2 &&
		    d->base_format != IMG_RAW))))
			return -1;
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=%u", QEMU_FD_DISK_N(i),
		    10 + 2 * i);
		if (d->has_base) {
			rc |= arg_add(qa, "-add-fd");
			rc |= arg_add(qa, "fd=%d,set=%u", QEMU_FD_BASE_N(i),
			    11 + 2 * i);
			rc |= arg_add(qa, "-blockdev");
			rc |= arg_add(qa, "driver=%s,node-name=base%u,"
			    "read-only=on,file.driver=file,"
			    "file.filename=/dev/fdset/%u",
			    qemu_driver(d->base_format), i, 11 + 2 * i);
			rc |= arg_add(qa, "-blockdev");
			rc |= arg_add(qa, "driver=qcow2,node-name=disk%u,"
			    "backing=base%u,file.driver=file,"
			    "file.filename=/dev/fdset/%u", i, i, 10 + 2 * i);
		} else {
			rc |= arg_add(qa, "-blockdev");
			rc |= arg_add(qa, "driver=%s,node-name=disk%u,"
			    "file.driver=file,file.filename=/dev/fdset/%u",
			    qemu_driver(d->format), i, 10 + 2 * i);
		}
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "virtio-blk-pci,drive=disk%u,bootindex=%u",
		    i, boot++);
	}
	return rc;
}

/*
 * The whole command line of one VM.  Returns 0, or -1 if a value is out
 * of range (which means a bug in mcvmd: callers validated them).
 */
int
qemu_build_argv(const struct qemu_spec *s, struct qemu_argv *qa)
{
	char	 id[2 * ID_MAX + 1], tsc[48] = "";
	int	 rc = 0;

	memset(qa, 0, sizeof(*qa));
	if (!valid_id(s->vm_id, "vm-") ||
	    (s->mac != NULL && !qemu_valid_mac(s->mac)) ||
	    !valid_range_u64(s->memory_mib, VM_MEMORY_MIN_MIB,
	    VM_MEMORY_MAX_MIB) ||
	    !valid_range_u64(s->vcpus, 1, VM_VCPUS_MAX) ||
	    qemu_escape(s->vm_id, id, sizeof(id)) == -1 ||
	    s->ndisks > VM_DISKS_MAX || (s->ndisks == 0 && (s->cd ||
	    s->firmware != FW_BIOS || s->machine != MACH_Q35)) ||
	    (s->ndisks > 0 && (s->restore || s->hold ||
	    s->ram != QEMU_RAM_ANON)) ||
	    (s->ram != QEMU_RAM_ANON && !s->restore) ||
	    (s->firmware != FW_BIOS && s->firmware != FW_UEFI) ||
	    (s->machine != MACH_Q35 && s->machine != MACH_PC))
		return -1;

	rc |= arg_add(qa, "%s", QEMU_BIN);
	rc |= arg_add(qa, "-name");
	rc |= arg_add(qa, "guest=%s", id);
	rc |= arg_add(qa, "-nodefaults");
	rc |= arg_add(qa, "-no-user-config");
	rc |= arg_add(qa, "-display");
	rc |= arg_add(qa, "none");
	rc |= arg_add(qa, "-sandbox");
	rc |= arg_add(qa, "on,obsolete=deny,elevateprivileges=deny,"
	    "spawn=deny,resourcecontrol=deny");
	rc |= arg_add(qa, "-machine");
	/* UEFI: the firmware's code and the VM's variables are flash. */
	rc |= arg_add(qa, "%s%s%s", s->machine == MACH_PC ? "pc" : "q35",
	    s->ndisks > 0 && s->firmware == FW_UEFI ?
	    ",pflash0=code,pflash1=vars" : "",
	    s->ram != QEMU_RAM_ANON ? ",memory-backend=" QEMU_RAM_ID : "");
	rc |= arg_add(qa, "-accel");
	if (s->accel == ACCEL_USE_KVM)
		rc |= arg_add(qa, "kvm");
	else
		rc |= arg_add(qa, "tcg,tb-size=%u", QEMU_TCG_TB_MIB);
	rc |= arg_add(qa, "-cpu");
	rc |= arg_add(qa, "%s", s->accel == ACCEL_USE_KVM ? "host" : "qemu64");
	rc |= arg_add(qa, "-m");
	rc |= arg_add(qa, "%u", s->memory_mib);
	/*
	 * A template's RAM, from a file: the template maps it shared, and
	 * its checkpoint leaves it out (x-ignore-shared); each clone maps
	 * it copy-on-write, so that the pages it does not write stay the
	 * template's, in the page cache once for all of them.  The block's
	 * id is the machine's own, so that the host template's stream,
	 * from anonymous RAM, loads into it.
	 */
	if (s->ram != QEMU_RAM_ANON) {
		rc |= arg_add(qa, "-object");
		rc |= arg_add(qa, "memory-backend-file,id=%s,size=%uM,"
		    "mem-path=%s,share=%s", QEMU_RAM_ID, s->memory_mib,
		    QEMU_JAIL_RAM, s->ram == QEMU_RAM_SHARED ? "on" : "off");
	}
	rc |= arg_add(qa, "-smp");
	rc |= arg_add(qa, "%u", s->vcpus);
	rc |= arg_add(qa, "-no-reboot");
	/*
	 * A checkpoint carries no run state, so that a VM restored from it
	 * runs, even one that was paused while it was written (hibernated).
	 */
	rc |= arg_add(qa, "-global");
	rc |= arg_add(qa, "migration.store-global-state=off");
	/*
	 * Own disks (no agent to ask for the console before a stop): the
	 * guest's reset or power-off pauses QEMU instead of ending it, so
	 * that mcvmd keeps its console before it ends QEMU (and after an
	 * install CD's boot, boots the disks alone).
	 */
	if (s->ndisks > 0)
		rc |= arg_add(qa, "-no-shutdown");
	if (s->mac == NULL) {
		rc |= arg_add(qa, "-nic");
		rc |= arg_add(qa, "none");
	} else {
		/* netd opened it with IFF_VNET_HDR; QEMU reads that off
		 * the fd (vnet_hdr= is refused with fd= on 7.2). */
		rc |= arg_add(qa, "-netdev");
		rc |= arg_add(qa, "tap,id=net0,fd=%d", QEMU_FD_TAP);
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "virtio-net-pci,netdev=net0,mac=%s", s->mac);
	}

	if (s->ndisks > 0)
		rc |= own_disks(s, qa);
	else if (s->restore) {
		/*
		 * The guest's kernel is in the checkpoint: QEMU need not
		 * hold a copy for the firmware.  The option ROM that -kernel
		 * adds must still be there, as the migration stream has its
		 * memory.
		 */
		rc |= arg_add(qa, "-option-rom");
		rc |= arg_add(qa, "%s", QEMU_LINUXBOOT_ROM);
		/*
		 * The monitor loads it (migrate-incoming), once it has set
		 * the capabilities the checkpoint was written with.
		 */
		rc |= arg_add(qa, "-incoming");
		rc |= arg_add(qa, "defer");
		if (s->paused)
			rc |= arg_add(qa, "-S");
	} else {
		rc |= arg_add(qa, "-kernel");
		rc |= arg_add(qa, "%s", QEMU_JAIL_KERNEL);
		if (s->has_initrd) {
			rc |= arg_add(qa, "-initrd");
			rc |= arg_add(qa, "%s", QEMU_JAIL_INITRD);
		}
		/*
		 * The TSC matters to TCG guests only.  Its one watchdog there
		 * is jiffies, which loses ticks when the host is busy: the
		 * guest would mark the host's constant TSC unstable.
		 */
		if (s->accel != ACCEL_USE_KVM && s->tsc_khz != 0)
			(void)snprintf(tsc, sizeof(tsc),
			    " tsc_early_khz=%u tsc=reliable", s->tsc_khz);
		rc |= arg_add(qa, "-append");
		rc |= arg_add(qa, "%s%s%s", s->accel == ACCEL_USE_KVM ?
		    QEMU_APPEND : QEMU_APPEND_TCG, tsc,
		    s->hold ? " mcvm.hold" : "");
	}

	/* Disks are fds: /dev/fdset/N names an -add-fd set, no path. */
	if (s->ndisks > 0)
		goto devices;
	rc |= arg_add(qa, "-add-fd");
	rc |= arg_add(qa, "fd=%d,set=1", QEMU_FD_DISK);
	if (s->disk_format == DISK_QCOW2) {
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=2", QEMU_FD_BASE);
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=raw,node-name=base,read-only=on,"
		    "file.driver=file,file.filename=/dev/fdset/2");
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=qcow2,node-name=disk,backing=base,"
		    "file.driver=file,file.filename=/dev/fdset/1");
	} else {
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "driver=raw,node-name=disk,"
		    "file.driver=file,file.filename=/dev/fdset/1");
		/*
		 * Where QEMU keeps a raw disk's live snapshots of RAM and
		 * devices: a qcow2 on no device, with no backing whatever
		 * its header says (JSON, as the key=value form has no null).
		 */
		rc |= arg_add(qa, "-add-fd");
		rc |= arg_add(qa, "fd=%d,set=3", QEMU_FD_STATE);
		rc |= arg_add(qa, "-blockdev");
		rc |= arg_add(qa, "{\"driver\":\"qcow2\",\"node-name\":"
		    "\"%s\",\"backing\":null,\"file\":{\"driver\":"
		    "\"file\",\"filename\":\"/dev/fdset/3\"}}",
		    QEMU_NODE_STATE);
	}
	rc |= arg_add(qa, "-device");
	rc |= arg_add(qa, "virtio-blk-pci,drive=disk");

devices:
	rc |= arg_add(qa, "-chardev");
	rc |= arg_add(qa, "socket,id=qmp,fd=%d", QEMU_FD_QMP);
	rc |= arg_add(qa, "-mon");
	rc |= arg_add(qa, "chardev=qmp,mode=control");
	rc |= arg_add(qa, "-chardev");
	rc |= arg_add(qa, "socket,id=agent,fd=%d", QEMU_FD_AGENT);
	rc |= arg_add(qa, "-device");
	rc |= arg_add(qa, "virtio-serial-pci");
	rc |= arg_add(qa, "-device");
	/*
	 * The id names the port in VSERPORT_CHANGE events.  A guest from
	 * its own disks finds qemu-guest-agent's port instead of mcvm's.
	 */
	rc |= arg_add(qa, "virtserialport,chardev=agent,id=agent0,name=%s",
	    s->ndisks > 0 ? QGA_PORT_NAME : AGENT_PORT_NAME);
	/*
	 * The serial console is a ring in QEMU: a guest that floods it
	 * overwrites its oldest bytes and never waits, whether the monitor
	 * reads it or not.
	 */
	rc |= arg_add(qa, "-chardev");
	rc |= arg_add(qa, "ringbuf,id=%s,size=%s", QEMU_SERIAL_ID,
	    QEMU_SERIAL_RING);
	rc |= arg_add(qa, "-serial");
	rc |= arg_add(qa, "chardev:%s", QEMU_SERIAL_ID);
	/*
	 * The display, and input without guest software: the machine's
	 * PS/2 keyboard (and mouse, for guests with its driver), an
	 * absolute tablet for clicks, and a relative mouse the project's
	 * guest kernel has a driver for.
	 */
	if (s->display) {
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "VGA");
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "virtio-tablet-pci");
		rc |= arg_add(qa, "-device");
		rc |= arg_add(qa, "virtio-mouse-pci");
	}
	rc |= arg_add(qa, "-device");
	rc |= arg_add(qa, "virtio-rng-pci");
	return rc != 0 ? -1 : 0;
}

/*
 * auto: KVM where it can run a standard guest kernel, TCG otherwise.  On a
 * nested PVM host (kvm_pvm loaded) /dev/kvm exists but standard kernels
 * hang under it, so auto falls back.  why receives the reason, for logs.
 * sysroot prefixes the paths probed (tests point it at a fake tree).
 */
enum accel_choice
accel_choose(enum accel_mode mode, const char *sysroot, char *why,
    size_t whylen)
{
	char		 kvm[PATH_MAX], pvm[PATH_MAX];
	struct stat	 st;
	int		 fd;

	(void)snprintf(kvm, sizeof(kvm), "%s/dev/kvm", sysroot);
	(void)snprintf(pvm, sizeof(pvm), "%s/sys/module/kvm_pvm", sysroot);
	switch (mode) {
	case ACCEL_TCG:
		(void)snprintf(why, whylen, "tcg: configured");
		return ACCEL_USE_TCG;
	case ACCEL_KVM:
		(void)snprintf(why, whylen, "kvm: configured");
		return ACCEL_USE_KVM;
	case ACCEL_AUTO:
		break;
	}
	if (stat(pvm, &st) == 0) {
		(void)snprintf(why, whylen, "tcg: %s exists: a nested PVM "
		    "host, where standard guest kernels hang under KVM", pvm);
		return ACCEL_USE_TCG;
	}
	if ((fd = open(kvm, O_RDWR | O_CLOEXEC)) == -1) {
		(void)snprintf(why, whylen, "tcg: %s: %s", kvm,
		    strerror(errno));
		return ACCEL_USE_TCG;
	}
	close(fd);
	(void)snprintf(why, whylen, "kvm: %s is usable", kvm);
	return ACCEL_USE_KVM;
}

/*
 * Under TCG the guest's TSC is the host's (QEMU reads it for RDTSC), but
 * without ACPI the guest can only calibrate it against the emulated PIT,
 * which often fails, leaving the guest on a 4 ms jiffies clock; and every
 * VM restored from a template keeps the template's.  mcvmd measures the
 * host's rate once and tells the guest (tsc_early_khz=).  0 if the host's
 * TSC is not constant, or the measure fails.
 */
uint32_t
qemu_tsc_khz(void)
{
	struct timespec	 t0, t1, step = { 0, 20 * 1000 * 1000 };
	uint64_t	 c0, c1, ns;
	char		 line[4096];
	FILE		*f;
	int		 constant = 0;

	if ((f = fopen("/proc/cpuinfo", "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "flags", 5) == 0) {
			constant = strstr(line, " constant_tsc") != NULL &&
			    strstr(line, " nonstop_tsc") != NULL;
			break;
		}
	fclose(f);
	if (!constant)
		return 0;
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &t0) == -1)
		return 0;
	c0 = __builtin_ia32_rdtsc();
	(void)nanosleep(&step, NULL);
	c1 = __builtin_ia32_rdtsc();
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &t1) == -1)
		return 0;
	ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ULL +
	    (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	if (ns == 0 || c1 <= c0 || (c1 - c0) / ns > 100)
		return 0;
	return (uint32_t)((c1 - c0) * 1000000ULL / ns);
}
