#!/usr/bin/env bash
# memory.sh: resident bytes per rate-limit key, throttled beside redis-server, in one run.
# Loads N keys with 14-byte names into each server and divides the growth of VmRSS by N.
# redis-server gets what redis-cell stores for a GCRA key: a string holding the TAT in ns, with an
# expiry; throttled gets each algorithm in turn. Usage: benchmarks/memory.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
make -s build deps
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tp=$(port); rp=$(port)
tmp=$(mktemp -d)
./bin/throttled --port "$tp" --dir "$tmp/t" --appendonly "${APPENDONLY:-no}" --loglevel warning & tpid=$!
redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --loglevel warning & rpid=$!
trap 'kill $tpid $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$tp" "$rp"; do
	until redis-cli -p "$p" PING >/dev/null 2>&1; do sleep 0.05; done
done
rss() { awk '/VmRSS/ { print $2 * 1024 }' "/proc/$1/status"; }
load() { # port, command format, keys (default n), calls per key (default 1)
	python3 - "${3:-$n}" "$2" "${4:-1}" <<'PY' | redis-cli -p "$1" --pipe >/dev/null
import sys
n, fmt, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
out = sys.stdout
for _ in range(calls):
    for i in range(n):
        args = (fmt % i).split()
        out.write("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))
PY
}
r0=$(rss $rpid)
load "$rp" "SET user:%09d 1795325000000000000 PX 3600000"
sleep "${SETTLE:-1}"
r=$(( $(rss $rpid) - r0 ))
per() { awk -v b="$1" -v n="$2" 'BEGIN { printf "%.1f", b / n }'; }
printf '%-44s %10s\n' "state (14-byte key names)" "bytes/key"
printf '%-44s %10s\n' "redis-server: string TAT with expiry" "$(per $r $n)"
# name | command format (%d is the key number) | keys | calls per key
while IFS='|' read -r name fmt keys calls; do
	before=$(rss $tpid)
	load "$tp" "$fmt" "$keys" "$calls"
	sleep "${SETTLE:-1}"
	printf '%-44s %10s\n' "throttled: $name" "$(per $(( $(rss $tpid) - before )) "$keys")"
done <<LIST
CL.THROTTLE (gcra)|CL.THROTTLE user:%09d 100 10 3600 1|$n|1
TOKENBUCKET|TOKENBUCKET tb:%011d 100 10 1h|$n|1
LEAKYBUCKET|LEAKYBUCKET lb:%011d 100 10 1h|$n|1
WINDOW|WINDOW fw:%011d 100 1h|$n|1
SLIDE APPROX|SLIDE sc:%011d 100 1h APPROX|$n|1
SLIDE, 100 admissions in the window|SLIDE sl:%011d 1000 1h|$((n / 100))|100
CONCURRENCY.ACQUIRE, one holder|CONCURRENCY.ACQUIRE cc:%011d 10 1h worker-1|$n|1
LIST
