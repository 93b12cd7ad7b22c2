#!/usr/bin/env bash
# persistence.sh: what durability costs. redis-benchmark runs THROTTLE on 100000 random keys
# against three servers started here on loopback ports: appendonly no, appendfsync everysec
# and appendfsync always, taking turns, rounds times; it prints the median of each and the
# cost against appendonly no. Pipelined runs (-P 16) send ten times the requests, so that
# they last as long as the others: the writer works behind the clients, and a short run
# would end before it has written what the run changed.
# Usage: benchmarks/persistence.sh [requests] [clients] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
c=${2:-50}
rounds=${3:-5}
make -s build deps
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
declare -A ports
for mode in no everysec always; do
	ports[$mode]=$(port)
	if [ "$mode" = no ]; then
		opts=(--appendonly no)
	else
		opts=(--appendonly yes --appendfsync "$mode")
	fi
	./bin/throttled --port "${ports[$mode]}" --dir "$tmp/$mode" --loglevel warning "${opts[@]}" &
	pids+=($!)
done
for mode in no everysec always; do
	until redis-cli -p "${ports[$mode]}" PING >/dev/null 2>&1; do sleep 0.05; done
done
rps() { redis-benchmark -p "$1" -c "$c" -n "$((n * (1 + ($2 > 1) * 9)))" -r 100000 -P "$2" -q THROTTLE 'k:__rand_int__' 100 10 60 |
	tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-22s %4s %14s %8s\n' "THROTTLE k 100 10 60" "-P" "requests/s" "cost"
for P in 1 16; do
	declare -A runs=()
	for _ in $(seq "$rounds"); do
		for mode in no everysec always; do
			runs[$mode]+="$(rps "${ports[$mode]}" "$P") "
		done
	done
	base=$(echo "${runs[no]}" | tr ' ' '\n' | grep . | median)
	for mode in no everysec always; do
		m=$(echo "${runs[$mode]}" | tr ' ' '\n' | grep . | median)
		label="appendfsync $mode"
		[ "$mode" = no ] && label="appendonly no"
		printf '%-22s %4s %14s %7.1f%%\n' "$label" "$P" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print (1 - a / b) * 100 }')"
	done
done
for mode in everysec always; do
	redis-cli -p "${ports[$mode]}" SAVE >/dev/null
	printf '%s: %s keys, %s bytes on disk\n' "$mode" "$(redis-cli -p "${ports[$mode]}" DBSIZE)" "$(du -sb "$tmp/$mode" | cut -f1)"
done
