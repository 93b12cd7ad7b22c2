package server

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestCountersExactAcrossLoops drives four event loops from eight connections at once and
// checks that what the per-loop counter slots sum to is what the clients sent and were
// answered: INFO commandstats, stats, keyspace and throttle, the metrics' snapshot and
// TOPDENIED; then that CONFIG RESETSTAT zeroes every slot.
func TestCountersExactAcrossLoops(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 4; c.AppendOnly = false })
	require.Len(t, ts.slots, max(4, len(ts.slots)))
	admin := ts.client(t, 2)
	do(t, admin, "POLICY.SET", "api", "THROTTLE", "2", "1", "1h")

	const workers, rounds = 8, 60
	type tally struct {
		allowed, denied             map[string]int64 // by verb
		checkAllowed, checkDenied   int64
		deniedByKey                 map[string]int64
		calls                       map[string]int64
		rejected, failed, hits, mis int64
	}
	tallies := make([]tally, workers)
	var wg sync.WaitGroup
	for w := range workers {
		rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
		t.Cleanup(func() { rdb.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			tl := tally{allowed: map[string]int64{}, denied: map[string]int64{}, deniedByKey: map[string]int64{}, calls: map[string]int64{}}
			for i := range rounds {
				pipe := rdb.Pipeline()
				key := fmt.Sprintf("g:%d:%d", w, i)
				tkey := fmt.Sprintf("t:%d:%d", w, i%3)
				ckey := fmt.Sprintf("c:%d:%d", w, i%2)
				set := pipe.Do(ctx, "SET", key, "v")
				get := pipe.Do(ctx, "GET", key)
				miss := pipe.Do(ctx, "GET", "missing:"+key)
				incr := pipe.Do(ctx, "INCR", fmt.Sprintf("n:%d", w))
				thr := pipe.Do(ctx, "THROTTLE", tkey, 1, 1, "1h")
				cell := pipe.Do(ctx, "CL.THROTTLE", ckey, 1, 1, 3600)
				chk := pipe.Do(ctx, "CHECK", "api", fmt.Sprintf("s:%d", w))
				arity := pipe.Do(ctx, "THROTTLE", tkey) // rejected
				bad := pipe.Do(ctx, "INCR", key)        // failed: not an integer
				_, _ = pipe.Exec(ctx)
				for _, r := range []*redis.Cmd{set, get, miss, incr, thr, cell, chk} {
					if r.Err() != nil && r.Err() != redis.Nil {
						t.Errorf("%v: %v", r.Args(), r.Err())
						return
					}
				}
				if arity.Err() == nil || bad.Err() == nil {
					t.Errorf("arity %v, bad %v: want errors", arity.Err(), bad.Err())
					return
				}
				for name, n := range map[string]int64{"set": 1, "get": 2, "incr": 2, "throttle": 1, "cl.throttle": 1, "check": 1} {
					tl.calls[name] += n
				}
				tl.rejected++
				tl.failed++
				tl.hits++
				tl.mis++
				for verb, r := range map[string]*redis.Cmd{"throttle": thr, "cl.throttle": cell, "check": chk} {
					limited := r.Val().([]any)[0].(int64) == 1
					k := map[string]string{"throttle": tkey, "cl.throttle": ckey}[verb]
					switch {
					case limited && verb == "check":
						tl.checkDenied++
					case verb == "check":
						tl.checkAllowed++
					case limited:
						tl.denied[verb]++
						tl.deniedByKey[k]++
					default:
						tl.allowed[verb]++
					}
				}
			}
			tallies[w] = tl
		}()
	}
	wg.Wait()

	var want tally
	want.allowed, want.denied, want.calls, want.deniedByKey = map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, tl := range tallies {
		for k, v := range tl.allowed {
			want.allowed[k] += v
		}
		for k, v := range tl.denied {
			want.denied[k] += v
		}
		for k, v := range tl.calls {
			want.calls[k] += v
		}
		for k, v := range tl.deniedByKey {
			want.deniedByKey[k] += v
		}
		want.checkAllowed += tl.checkAllowed
		want.checkDenied += tl.checkDenied
		want.rejected += tl.rejected
		want.failed += tl.failed
		want.hits += tl.hits
		want.mis += tl.mis
	}
	require.NotZero(t, want.denied["throttle"])
	require.NotZero(t, want.checkDenied)

	info := do(t, admin, "INFO", "everything").(string)
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(.*)\r$`).FindStringSubmatch(info)
		require.NotNil(t, m, "%s in %s", name, info)
		return m[1]
	}
	num := func(name string) int64 {
		n, err := strconv.ParseInt(field(name), 10, 64)
		require.NoError(t, err, name)
		return n
	}
	stat := func(cmd string) (calls, rejected, failed int64) {
		m := regexp.MustCompile(`calls=(\d+),usec=\d+,usec_per_call=[\d.]+,rejected_calls=(\d+),failed_calls=(\d+)`).FindStringSubmatch(field("cmdstat_" + cmd))
		calls, _ = strconv.ParseInt(m[1], 10, 64)
		rejected, _ = strconv.ParseInt(m[2], 10, 64)
		failed, _ = strconv.ParseInt(m[3], 10, 64)
		return
	}
	var sumCalls int64
	for _, m := range regexp.MustCompile(`(?m)^cmdstat_[^:]+:calls=(\d+),`).FindAllStringSubmatch(info, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		sumCalls += n
	}
	for name, n := range want.calls {
		calls, _, _ := stat(name)
		require.Equal(t, n, calls, "cmdstat_%s", name)
	}
	_, rejected, _ := stat("throttle")
	require.Equal(t, want.rejected, rejected)
	_, _, failed := stat("incr")
	require.Equal(t, want.failed, failed)
	// INFO's own call is counted as processed at its start, its call at its end.
	require.Equal(t, sumCalls+1, num("total_commands_processed"))
	require.Equal(t, want.hits, num("keyspace_hits"))
	require.Equal(t, want.mis, num("keyspace_misses"))
	require.Equal(t, want.rejected+want.failed, num("total_error_replies"))

	require.Equal(t, want.allowed["throttle"]+want.allowed["cl.throttle"]+want.checkAllowed, num("throttle_allowed"))
	require.Equal(t, want.denied["throttle"]+want.denied["cl.throttle"]+want.checkDenied, num("throttle_denied"))
	require.Equal(t, fmt.Sprintf("allowed=%d,denied=%d", want.allowed["throttle"], want.denied["throttle"]), field("verb_throttle"))
	require.Equal(t, fmt.Sprintf("allowed=%d,denied=%d", want.allowed["cl.throttle"], want.denied["cl.throttle"]), field("verb_cl_throttle"))
	require.Equal(t, fmt.Sprintf("allowed=%d,denied=%d,shadow_denied=0,warnings=0", want.checkAllowed, want.checkDenied), field("policy_api"))

	keys := int64(len(do(t, admin, "KEYS", "*").([]any)))
	dbsize := do(t, admin, "DBSIZE").(int64)
	require.Equal(t, keys, dbsize)
	require.Regexp(t, fmt.Sprintf(`^keys=%d,`, keys+1), field("db0"), "the keyspace's count, the policies' record with the keys")

	snap := ts.Snapshot()
	for _, d := range snap.Decisions {
		if d.Verb == "throttle" || d.Verb == "cl.throttle" {
			require.Equal(t, want.allowed[d.Verb], d.Allowed, d.Verb)
			require.Equal(t, want.denied[d.Verb], d.Denied, d.Verb)
		}
	}
	for _, c := range snap.Commands {
		if n, ok := want.calls[c.Name]; ok {
			require.Equal(t, n, c.Calls, c.Name)
		}
	}

	top := do(t, admin, "TOPDENIED", 1000).([]any)
	got := map[string]int64{}
	for i := 0; i+1 < len(top); i += 2 {
		got[top[i].(string)] = top[i+1].(int64)
	}
	for k, n := range want.deniedByKey {
		require.Equal(t, n, got[k], "TOPDENIED %s", k)
	}

	require.Equal(t, "OK", do(t, admin, "CONFIG", "RESETSTAT"))
	info = do(t, admin, "INFO", "everything").(string)
	require.Equal(t, int64(0), num("throttle_allowed"))
	require.Equal(t, int64(0), num("throttle_denied"))
	require.Equal(t, int64(0), num("keyspace_hits"))
	require.Equal(t, int64(0), num("total_error_replies"))
	require.Equal(t, "allowed=0,denied=0", field("verb_throttle"))
	require.NotContains(t, info, "cmdstat_get:")
	require.Equal(t, int64(1), num("total_commands_processed"), "INFO itself")
}
