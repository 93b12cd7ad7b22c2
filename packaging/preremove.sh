#!/bin/sh
# Before removal (not before an upgrade): stop and disable the service. The state in
# /var/lib/throttled stays.
set -e
case "$1" in
	remove|purge|0)
		if [ -d /run/systemd/system ]; then
			systemctl disable --now throttled >/dev/null 2>&1 || true
		fi
		;;
esac
