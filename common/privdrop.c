/*
 * Privilege drop: chroot, then credentials, then capabilities.  seccomp
 * follows, loaded by the caller through sandbox.h.  Any failure is fatal:
 * a child that cannot shed what it must not hold does not run.  A child
 * also dies with its parent, mcvmd: none outlives the process that
 * supervises it.
 */
#include <sys/prctl.h>
#include <sys/types.h>

#include <linux/capability.h>

#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

static void	 privdrop_verify_caps(const struct privdrop *);

void
privdrop(const struct privdrop *pd)
{
	struct passwd	*pw;
	pid_t		 parent = getppid();
	uid_t		 ruid, euid, suid, uid = pd->uid;
	gid_t		 rgid, egid, sgid, gid = pd->gid;
	size_t		 i;

	if (pd->user != NULL) {
		if ((pw = getpwnam(pd->user)) == NULL)
			fatalx("%s: unknown user %s", __func__, pd->user);
		if (pw->pw_uid == 0)
			fatalx("%s: user %s is root", __func__, pd->user);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	} else if (uid != 0 && gid == 0)
		fatalx("%s: uid %u with gid 0", __func__, (unsigned int)uid);

	if (pd->chroot != NULL) {
		if (chroot(pd->chroot) == -1)
			fatal("%s: chroot %s", __func__, pd->chroot);
		if (chdir("/") == -1)
			fatal("%s: chdir /", __func__);
	}

	capng_clear(CAPNG_SELECT_ALL);
	for (i = 0; i < pd->ncaps; i++) {
		if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED,
		    pd->caps[i]) != 0)
			fatalx("%s: capng_update %d", __func__, pd->caps[i]);
	}

	if (uid != 0) {
		/* capng_change_id drops supplementary groups and the
		 * bounding set, and keeps only the capabilities set above. */
		if (capng_change_id((int)uid, (int)gid,
		    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING |
		    CAPNG_CLEAR_AMBIENT) != 0)
			fatalx("%s: cannot become uid %u", __func__,
			    (unsigned int)uid);
		if (getresuid(&ruid, &euid, &suid) == -1 ||
		    ruid != uid || euid != uid || suid != uid)
			fatalx("%s: uid not changed", __func__);
		if (getresgid(&rgid, &egid, &sgid) == -1 ||
		    rgid != gid || egid != gid || sgid != gid)
			fatalx("%s: gid not changed", __func__);
		if (setuid(0) != -1)
			fatalx("%s: could regain root", __func__);
	} else {
		if (setgroups(0, NULL) == -1)
			fatal("%s: setgroups", __func__);
		if (capng_apply(CAPNG_SELECT_ALL) != 0)
			fatalx("%s: capng_apply", __func__);
	}

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("%s: PR_SET_NO_NEW_PRIVS", __func__);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("%s: PR_SET_DUMPABLE", __func__);
	/* After the credentials changed, which clears it; a parent that is
	 * gone already shows in getppid(). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		fatal("%s: PR_SET_PDEATHSIG", __func__);
	if (getppid() != parent)
		fatalx("%s: the parent exited", __func__);
	privdrop_verify_caps(pd);
}

/* Reads the kernel's view back: exactly the requested set, nothing else. */
static void
privdrop_verify_caps(const struct privdrop *pd)
{
	unsigned int	 cap;
	size_t		 i;
	int		 want, eff, prm;

	if (capng_get_caps_process() != 0)
		fatalx("%s: cannot read capabilities", __func__);
	for (cap = 0; cap <= (unsigned int)CAP_LAST_CAP; cap++) {
		want = 0;
		for (i = 0; i < pd->ncaps; i++)
			if ((unsigned int)pd->caps[i] == cap)
				want = 1;
		eff = capng_have_capability(CAPNG_EFFECTIVE, cap);
		prm = capng_have_capability(CAPNG_PERMITTED, cap);
		if (eff != want || prm != want)
			fatalx("%s: capability %u is %s", __func__, cap,
			    want ? "missing" : "still held");
	}
}
