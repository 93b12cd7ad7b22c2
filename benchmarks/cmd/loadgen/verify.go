package main

import (
	"fmt"
	"slices"
)

// check is one Lua script tried against the throttled verb it stands for.
type check struct {
	name     string
	lua      func(key string) []string
	verb     func(key string) []string
	limited  []int64 // the expected limited flags of calls on a fresh key
	got      []int64 // the remaining the script replied, for the report
	verbRems []int64 // the remaining throttled replied
}

// verify calls each script and its throttled verb six times on a fresh key with a limit of 5:
// the first five must pass and the sixth be denied on both, with the same remaining each time.
func verify(redis, throttled *server, sc scripts) ([]check, error) {
	want := []int64{0, 0, 0, 0, 0, 1}
	checks := []check{
		{name: "gcra.lua vs CL.THROTTLE k 4 1 60",
			lua:  func(k string) []string { return []string{"EVALSHA", sc.gcra, "1", k, "4", "1", "60000", "1"} },
			verb: func(k string) []string { return []string{"CL.THROTTLE", k, "4", "1", "60", "1"} }},
		{name: "tokenbucket.lua vs TOKENBUCKET k 5 1 60s",
			lua:  func(k string) []string { return []string{"EVALSHA", sc.tokenBucket, "1", k, "5", "1", "60000", "1"} },
			verb: func(k string) []string { return []string{"TOKENBUCKET", k, "5", "1", "60s"} }},
		{name: "slidinglog.lua vs SLIDE k 5 60s",
			lua:  func(k string) []string { return []string{"EVALSHA", sc.slidingLog, "1", k, "5", "60000"} },
			verb: func(k string) []string { return []string{"SLIDE", k, "5", "60s"} }},
	}
	for i := range checks {
		c := &checks[i]
		c.limited = want
		key := fmt.Sprintf("check:%d", i)
		for range want {
			l, rem, err := decision(redis, c.lua(key))
			if err != nil {
				return nil, fmt.Errorf("check %s: redis: %w", c.name, err)
			}
			c.got = append(c.got, rem)
			tl, trem, err := decision(throttled, c.verb(key))
			if err != nil {
				return nil, fmt.Errorf("check %s: throttled: %w", c.name, err)
			}
			c.verbRems = append(c.verbRems, trem)
			if n := len(c.got) - 1; l != want[n] || tl != want[n] {
				return nil, fmt.Errorf("check %s: call %d: limited %d on redis, %d on throttled, want %d",
					c.name, n+1, l, tl, want[n])
			}
		}
		if !slices.Equal(c.got, c.verbRems) {
			return nil, fmt.Errorf("check %s: remaining %v on redis, %v on throttled", c.name, c.got, c.verbRems)
		}
	}
	return checks, nil
}

// decision sends one rate-limit command and returns its limited and remaining.
func decision(s *server, args []string) (limited, remaining int64, err error) {
	v, err := s.do(args...)
	if err != nil {
		return 0, 0, err
	}
	a, ok := v.([]any)
	if !ok || len(a) < 3 {
		return 0, 0, fmt.Errorf("reply %v is not a decision", v)
	}
	limited, ok1 := a[0].(int64)
	remaining, ok2 := a[2].(int64)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("reply %v is not a decision", v)
	}
	return limited, remaining, nil
}
