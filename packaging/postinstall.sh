#!/bin/sh
# After install or upgrade: systemd reads the unit again. The service is not started here:
# the operator enables it (systemctl enable --now throttled) once the config is as wanted.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	if systemctl is-active --quiet throttled; then
		systemctl try-restart throttled >/dev/null 2>&1 || true
	fi
fi
