#!/usr/bin/env bash
# redis-units.sh: Redis 7.0.15's own test units against one or more servers, each unit against a
# fresh server in a fresh directory, and a table of the tests each server passed.
#
# Usage: benchmarks/redis-units.sh TESTS SERVER...
#   TESTS   a folder holding runtest and tests/ of Redis 7.0.15:
#           git -C redis archive 7.0.15 tests runtest | tar -x -C TESTS
#   SERVER  a binary that takes --port and --dir (bin/throttled, redis-server)
# Environment: UNITS (names such as "unit/multi unit/type/list"; all of tests/unit by default),
# OUT (where each unit's log is kept; a fresh folder by default), KEEP=1 (a unit whose log is
# already in OUT is not run again: two runs in parallel, then one that prints them together),
# TIMEOUT (seconds a unit may take, 300), BASEPORT (runtest's --baseport, 21111: two runs at once
# each need their own, as runtest's own listener takes the first free port of the 32 below it).
#
# Each unit runs as a user's test suite would:
#   ./runtest --host 127.0.0.1 --port P --singledb --durable --single unit/NAME --tags -needs:debug
# A test counts once it prints [ok]. Not run by make test: a round takes an hour on two cores.
set -uo pipefail
tests=$(cd "${1:?usage: redis-units.sh TESTS SERVER...}" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: redis-units.sh TESTS SERVER..." >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
if [ -z "${UNITS:-}" ]; then
	UNITS=$(cd "$tests/tests" && ls unit/*.tcl unit/type/*.tcl | grep -v list-common | sed 's/\.tcl$//')
fi
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
count() { sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -c "^\[$2\]"; }

run_unit() { # server label unit log
	local p dir pid copy
	p=$(port)
	dir=$(mktemp -d)
	# A copy of the tests each: runtest writes under tests/tmp.
	copy=$(mktemp -d)
	cp -r "$tests/runtest" "$tests/tests" "$copy/"
	"$1" --port "$p" --dir "$dir" >"$dir.server.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.1; done
	(cd "$copy" && timeout "${TIMEOUT:-300}" ./runtest --host 127.0.0.1 --port "$p" --singledb \
		--durable --single "$3" --tags -needs:debug --baseport "${BASEPORT:-21111}") >"$4" 2>&1
	echo "exit $?" >>"$4"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -rf "$dir" "$dir.server.log" "$copy"
}

labels=()
for server in "$@"; do
	label=$(basename "$server")
	labels+=("$label")
	if [ -e "$out/$label" ] && [ ! -d "$out/$label" ]; then
		echo "redis-units.sh: $out/$label is a file (OUT holds the server?): choose another OUT" >&2
		exit 2
	fi
	mkdir -p "$out/$label"
	for unit in $UNITS; do
		log="$out/$label/$(echo "$unit" | tr / _).log"
		if [ "${KEEP:-}" = 1 ] && [ -s "$log" ]; then continue; fi
		run_unit "$server" "$label" "$unit" "$log"
		echo "$label $unit ok=$(count "$log" ok) err=$(count "$log" err)" >&2
	done
done

printf '| unit |'; for l in "${labels[@]}"; do printf ' %s |' "$l"; done; echo
printf '|---|'; for _ in "${labels[@]}"; do printf -- '---:|'; done; echo
declare -A total
for unit in $UNITS; do
	printf '| %s |' "$unit"
	for l in "${labels[@]}"; do
		n=$(count "$out/$l/$(echo "$unit" | tr / _).log" ok)
		total[$l]=$(( ${total[$l]:-0} + n ))
		printf ' %s |' "$n"
	done
	echo
done
printf '| **total** |'; for l in "${labels[@]}"; do printf ' **%s** |' "${total[$l]}"; done; echo
