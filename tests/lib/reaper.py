#!/usr/bin/env python3
# reaper.py REPORT COMMAND [ARG...]: runs COMMAND as the child of a child
# subreaper, forwards SIGTERM and SIGINT to it, and exits with its status.
# A process of COMMAND's tree whose parent died comes to this subreaper
# unless a closer one (COMMAND itself) takes it; whatever of them is left,
# alive or a zombie, when COMMAND has exited is written to REPORT, one
# "pid command" a line, then killed and reaped.  An empty REPORT means
# COMMAND outlived every descendant it had.
import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def children():
    path = "/proc/self/task/%d/children" % os.getpid()
    with open(path) as f:
        return [int(p) for p in f.read().split()]


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            text = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        text = ""
    return text.strip() or "(zombie)"


def main():
    report, argv = sys.argv[1], sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl: %s" % os.strerror(ctypes.get_errno()))
    pid = os.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, f: os.kill(pid, s))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    left = children()
    with open(report, "w") as f:
        for p in left:
            f.write("%d %s\n" % (p, cmdline(p)))
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 128 - code)


main()
