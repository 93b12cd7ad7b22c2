#!/usr/bin/env bash
# increx.sh: throttled's INCREX against redis-server's INCR (issue 38: "INCREX at least Redis
# INCR's rate in the same run"), at pipeline 1 and 16 over 100,000 random keys. Both servers
# run on the last CPU and redis-benchmark on the others (taskset), so that the load does not
# take a server's CPU; the two are measured alternately in interleaved rounds, and the medians
# of the ratios of requests per second and of the server's CPU per request (from /proc: on a
# shared machine the steadier of the two) are printed. Usage: benchmarks/increx.sh [rounds] [clients]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
c=${2:-50}
make -s build
last=$(($(nproc) - 1))
srv=(taskset -c "$last")
load=(taskset -c "0-$((last > 0 ? last - 1 : 0))")
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tp=$(port); rp=$(port)
tmp=$(mktemp -d)
"${srv[@]}" ./bin/throttled --port "$tp" --dir "$tmp/t" --appendonly no --loglevel warning 2>/dev/null & tpid=$!
"${srv[@]}" redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --daemonize no --loglevel warning >/dev/null & rpid=$!
trap 'kill $tpid $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$tp" "$rp"; do
	until redis-cli -p "$p" PING >/dev/null 2>&1; do sleep 0.05; done
done
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # the process's user and system CPU, in 10 ms ticks
# run PORT PID N P ARGS... prints the requests per second and the server's CPU ns per request.
run() {
	local before after r
	before=$(ticks "$2")
	r=$("${load[@]}" redis-benchmark -p "$1" -c "$c" -n "$3" -r 100000 -P "$4" -q "${@:5}" | tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1)
	after=$(ticks "$2")
	echo "$r $(((after - before) * 10000000 / $3))"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
printf '%-44s %3s %10s %10s %7s %14s %7s\n' "throttled command against redis INCR" "-P" "throttled" "redis" "ratio" "CPU ns/req" "ratio"
for P in 1 16; do
	n=$((P == 1 ? 200000 : 2000000))
	for form in "INCREX k:__rand_int__" "INCREX k:__rand_int__ BYINT 1 UBOUND 100 EX 60"; do
		ratios=() cpus=()
		for round in $(seq "$rounds"); do
			if ((round % 2)); then
				read -r a ca < <(run "$tp" "$tpid" "$n" "$P" $form); read -r b cb < <(run "$rp" "$rpid" "$n" "$P" INCR 'k:__rand_int__')
			else
				read -r b cb < <(run "$rp" "$rpid" "$n" "$P" INCR 'k:__rand_int__'); read -r a ca < <(run "$tp" "$tpid" "$n" "$P" $form)
			fi
			ratios+=("$(ratio "$a" "$b")") cpus+=("$(ratio "$ca" "$cb")")
			printf '%-44s %3s %10.0f %10.0f %7s %6s / %-5s %7s\n' "${form//k:__rand_int__/k}" "$P" "$a" "$b" "${ratios[-1]}" "$ca" "$cb" "${cpus[-1]}"
		done
		printf '%-44s %3s %21s %7s %14s %7s\n' "median of $rounds rounds" "$P" "" "$(printf '%s\n' "${ratios[@]}" | median)" "" "$(printf '%s\n' "${cpus[@]}" | median)"
	done
done
