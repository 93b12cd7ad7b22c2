#!/usr/bin/env bash
# callgrind.sh OLD NEW [BENCH...]: instructions per call of server/'s in-process benchmarks
# (dispatch, the family's handler, the keyspace, the reply), counted by callgrind in two test
# binaries and differenced between runs of 10,000 and 30,000 calls so that start-up cancels
# out. OLD and NEW are directories of two checkouts (git worktree add /tmp/old <commit>).
# Counts, unlike times, repeat on a busy machine. Needs valgrind (apt-get install valgrind).
set -euo pipefail
old=$1 new=$2
shift 2
benches=${*:-CellThrottle GCRA Throttle TokenBucket AllOf Check Incr Get HSet}
out=$(mktemp -d)
for side in old new; do
	(cd "${!side}" && go test -c -o "$out/$side.test" ./server)
done
printf '%-14s %8s %8s %7s\n' benchmark old new change
for b in $benches; do
	declare -A per=()
	for side in old new; do
		tot=()
		for n in 10000 30000; do
			# Go's signal-based preemption confuses callgrind, and a collection's work
			# varies from run to run: both off for the count (the calls allocate nothing).
			GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
				"$out/$side.test" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime ${n}x -test.cpu 1 >/dev/null 2>&1
			tot+=("$(grep -m1 '^summary:' "$out/cg" | awk '{print $2}')")
		done
		per[$side]=$(( (tot[1] - tot[0]) / 20000 ))
	done
	printf '%-14s %8d %8d %+6.1f%%\n' "$b" "${per[old]}" "${per[new]}" "$(echo "100*(${per[new]}-${per[old]})/${per[old]}" | bc -l)"
done
rm -rf "$out"
