#!/bin/sh
# Creates the system users mcvm's unprivileged daemons run as, if missing:
# _mcvm (mcvm-frontd) and _mcvmstore (mcvm-stored, owner of the image store).
set -eu
for u in _mcvm _mcvmstore; do
	if ! getent passwd "$u" >/dev/null; then
		useradd --system --user-group --no-create-home \
		    --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
		echo "created user $u"
	fi
done
