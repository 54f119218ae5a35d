#!/usr/bin/env python3
# The anchors for hibernation's and creation's figures: raw QEMU, with the
# project's guest (build/image) booted under TCG with 512 MiB, migrated to
# a file with the bandwidth limit lifted until the file is fsynced, then a
# new QEMU restoring it (-incoming) until QMP says it runs.  Then the same
# guest with its RAM in a file mapped shared, checkpointed with
# x-ignore-shared (the device state alone), and clones mapping that file
# copy-on-write, each from its spawn until QMP says it runs (p50 of
# CLONES).  Prints two lines.
# Usage: qemu_anchor.py IMAGE_DIR WORK_DIR
import json
import os
import socket
import subprocess
import sys
import time

QEMU = "/usr/bin/qemu-system-x86_64"
BOOT_S = 15          # the guest settles; its agent waits for a host
DEADLINE_S = 120     # against a hang only
CLONES = 5


class Qmp:
    def __init__(self, path):
        t0 = time.monotonic()
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.monotonic() - t0 > DEADLINE_S:
                    raise
                time.sleep(0.005)
        self.f = self.s.makefile("rw")
        json.loads(self.f.readline())
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}))
        self.f.write("\n")
        self.f.flush()
        while True:
            m = json.loads(self.f.readline())
            if "return" in m:
                return m["return"]
            if "error" in m:
                raise RuntimeError(f"{name}: {m['error']}")


def qemu(img, sock, extra):
    return subprocess.Popen([
        QEMU, "-machine", "q35", "-accel", "tcg", "-cpu", "qemu64",
        "-m", "512", "-smp", "1", "-nodefaults", "-no-user-config",
        "-display", "none", "-kernel", f"{img}/vmlinuz",
        "-initrd", f"{img}/initrd.img",
        "-append", "console=ttyS0 root=/dev/vda ro panic=-1 quiet "
        "acpi=off",
        "-drive", f"file={img}/rootfs.ext4,format=raw,if=virtio,"
        "snapshot=on",
        "-chardev", "null,id=agent", "-device", "virtio-serial-pci",
        "-device", "virtserialport,chardev=agent,name=org.mcvm.agent.0",
        "-qmp", f"unix:{sock},server=on,wait=off"] + extra,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ram_file(path, share):
    return ["-object", f"memory-backend-file,id=pc.ram,size=512M,"
            f"mem-path={path},share={share}",
            "-machine", "memory-backend=pc.ram"]


def ignore_shared(q, on):
    q.cmd("migrate-set-capabilities", capabilities=[
        {"capability": "x-ignore-shared", "state": on}])


def wait_running(q, t0, what):
    while not q.cmd("query-status").get("running"):
        if time.monotonic() - t0 > DEADLINE_S:
            raise RuntimeError(f"{what} did not run")
        time.sleep(0.001)


def shared_clones(img, work):
    ram = os.path.join(work, "anchor.ram")
    dev = os.path.join(work, "anchor.dev")
    with open(ram, "wb") as f:
        f.truncate(512 << 20)
    a = qemu(img, os.path.join(work, "s.sock"), ram_file(ram, "on"))
    try:
        q = Qmp(os.path.join(work, "s.sock"))
        time.sleep(BOOT_S)
        ignore_shared(q, True)
        q.cmd("migrate", uri=f"exec:cat > {dev}")
        t0 = time.monotonic()
        while q.cmd("query-migrate").get("status") != "completed":
            if time.monotonic() - t0 > DEADLINE_S:
                raise RuntimeError("the migration did not complete")
            time.sleep(0.002)
    finally:
        a.kill()
        a.wait()
    times = []
    for i in range(CLONES):
        sock = os.path.join(work, f"c{i}.sock")
        t0 = time.monotonic()
        c = qemu(img, sock, ram_file(ram, "off") + ["-incoming", "defer"])
        try:
            q = Qmp(sock)
            ignore_shared(q, True)
            q.cmd("migrate-incoming", uri=f"exec:cat {dev}")
            wait_running(q, t0, "a clone")
            times.append((time.monotonic() - t0) * 1000)
        finally:
            c.kill()
            c.wait()
    size = os.path.getsize(dev) / 1024
    os.unlink(ram)
    os.unlink(dev)
    times.sort()
    print(f"anchor, raw QEMU 7.2 with the same guest, RAM mapped "
          f"copy-on-write from a shared file ({size:.0f} KiB of device "
          f"state): spawn to running p50 {times[len(times) // 2]:.0f} ms "
          f"({CLONES} clones)")


def main():
    img, work = sys.argv[1], sys.argv[2]
    ckpt = os.path.join(work, "anchor.ckpt")
    a = qemu(img, os.path.join(work, "a.sock"), [])
    try:
        q = Qmp(os.path.join(work, "a.sock"))
        time.sleep(BOOT_S)
        q.cmd("migrate-set-parameters", **{"max-bandwidth": 1 << 40})
        t0 = time.monotonic()
        q.cmd("migrate", uri=f"exec:cat > {ckpt}")
        while q.cmd("query-migrate").get("status") != "completed":
            if time.monotonic() - t0 > DEADLINE_S:
                raise RuntimeError("the migration did not complete")
            time.sleep(0.002)
        fd = os.open(ckpt, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        saved = (time.monotonic() - t0) * 1000
    finally:
        a.kill()
        a.wait()
    t0 = time.monotonic()
    b = qemu(img, os.path.join(work, "b.sock"),
             ["-incoming", f"exec:cat {ckpt}"])
    try:
        q = Qmp(os.path.join(work, "b.sock"))
        wait_running(q, t0, "the restore")
        restored = (time.monotonic() - t0) * 1000
    finally:
        b.kill()
        b.wait()
    size = os.path.getsize(ckpt) / 1048576
    os.unlink(ckpt)
    print(f"anchor, raw QEMU 7.2 with the same guest: migrated to a file "
          f"until fsynced {saved:.0f} ms ({size:.0f} MiB), restored "
          f"(-incoming) to running {restored:.0f} ms")
    shared_clones(img, work)


main()
