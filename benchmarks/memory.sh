#!/usr/bin/env bash
# memory.sh: resident bytes per rate-limit key, throttled beside redis-server, in one run.
# Loads N keys with 14-byte names ("user:000000001") into each server and divides the growth of
# VmRSS by N. throttled gets CL.THROTTLE (a GCRA key); redis-server gets what redis-cell stores for
# the same call: a string holding the TAT in ns, with an expiry. Usage: benchmarks/memory.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
make -s build deps
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tp=$(port); rp=$(port)
tmp=$(mktemp -d)
./bin/throttled --port "$tp" --dir "$tmp/t" --loglevel warning & tpid=$!
redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --loglevel warning & rpid=$!
trap 'kill $tpid $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$tp" "$rp"; do
	until redis-cli -p "$p" PING >/dev/null 2>&1; do sleep 0.05; done
done
rss() { awk '/VmRSS/ { print $2 * 1024 }' "/proc/$1/status"; }
load() { # port, command format
	python3 - "$n" "$2" <<'PY' | redis-cli -p "$1" --pipe >/dev/null
import sys
n, fmt = int(sys.argv[1]), sys.argv[2]
out = sys.stdout
for i in range(n):
    args = (fmt % i).split()
    out.write("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))
PY
}
t0=$(rss $tpid); r0=$(rss $rpid)
load "$tp" "CL.THROTTLE user:%09d 100 10 3600 1"
load "$rp" "SET user:%09d 1795325000000000000 PX 3600000"
sleep "${SETTLE:-1}"
t1=$(rss $tpid); r1=$(rss $rpid)
echo "keys: throttled $(redis-cli -p "$tp" DBSIZE), redis-server $(redis-cli -p "$rp" DBSIZE)"
awk -v n="$n" -v t="$((t1 - t0))" -v r="$((r1 - r0))" 'BEGIN {
	printf "resident bytes per key: throttled %.1f, redis-server %.1f (ratio %.2f)\n", t / n, r / n, t / r }'
