#!/usr/bin/env bash
# callgrind.sh OLD NEW [BENCH...]: instructions per call of server/'s in-process benchmarks
# (dispatch, the family's handler, the keyspace, the reply), counted by callgrind in two test
# binaries and differenced between runs of 10,000 and 30,000 calls so that start-up cancels
# out. OLD and NEW are directories of two checkouts (git worktree add /tmp/old <commit>).
# Counts, unlike times, repeat on a busy machine. Needs valgrind (apt-get install valgrind).
#
# With TOGGLE set to the function that holds a benchmark's measured loop ('*servePipeline' for
# BenchmarkPipeline's, '*benchFilled.func1' for benchRandom's), only what runs inside it counts, in
# one run of 20,000 calls, less what the server's active expiry did meanwhile: the expiry cycle is
# timed by the wall clock, so that over keys with an expiry (INCREX ... EX 60) it adds an amount
# that varies with the machine's load to the differenced counts. BENCH may name a sub-benchmark,
# as 'Pipeline$/^INCREX_k_BYINT$/^keys=100000$/^P=16$/^prefetch=16'.
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
		if [[ -n ${TOGGLE:-} ]]; then
			GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect="$TOGGLE" \
				"$out/$side.test" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 20000x -test.cpu 1 >/dev/null 2>&1
			# Each function's own count; those of the expiry cycle's goroutine left out.
			per[$side]=$(callgrind_annotate --threshold=100 --auto=no "$out/cg" | awk '
				/^-+$/ { rule++ } rule >= 3 && $1 ~ /^[0-9,]+$/ && $NF != "TOTALS" {
					n = $1; gsub(",", "", n); if ($0 !~ /[Ee]xpire(Step|Locked|Loop|For)/) sum += n }
				END { printf "%d", sum / 20001 }')
			continue
		fi
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
	printf '%-14s %8d %8d %+6.1f%%\n' "${b:0:60}" "${per[old]}" "${per[new]}" "$(echo "100*(${per[new]}-${per[old]})/${per[old]}" | bc -l)"
done
rm -rf "$out"
