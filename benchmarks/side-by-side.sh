#!/usr/bin/env bash
# side-by-side.sh: redis-benchmark against throttled (CL.THROTTLE) and redis-server (INCR) in one run,
# on loopback ports picked here. Usage: benchmarks/side-by-side.sh [requests] [clients]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
c=${2:-50}
make -s build deps
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tp=$(port); rp=$(port)
tmp=$(mktemp -d)
./bin/throttled --port "$tp" --dir "$tmp/t" --appendonly "${APPENDONLY:-yes}" --loglevel warning & tpid=$!
redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --daemonize no --loglevel warning & rpid=$!
trap 'kill $tpid $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$tp" "$rp"; do
	until redis-cli -p "$p" PING >/dev/null 2>&1; do sleep 0.05; done
done
rps() { redis-benchmark -p "$1" -c "$c" -n "$n" -r 100000 -P "$2" -q "${@:3}" | tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1; }
printf '%-36s %6s %14s\n' "command" "-P" "requests/s"
for P in 1 16; do
	a=$(rps "$tp" "$P" CL.THROTTLE 'k:__rand_int__' 100 10 60 1)
	b=$(rps "$rp" "$P" INCR 'k:__rand_int__')
	printf '%-36s %6s %14s\n' "throttled CL.THROTTLE k 100 10 60 1" "$P" "$a" "redis-server INCR k" "$P" "$b"
	printf '%-36s %6s %14.2f\n' "ratio" "$P" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
done
