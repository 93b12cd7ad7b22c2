package gcra

import "testing"

// Each benchmark drives one key per goroutine at 1µs steps, applying the
// state as the server would: mostly allowed calls with some denials.

func BenchmarkCell(b *testing.B) {
	p := CellParams{MaxBurst: 100, Count: 1_000_000, Period: 1, Quantity: 1}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var tat int64
		var exists bool
		now := base
		for pb.Next() {
			now += 1000
			r, err := Cell(now, tat, exists, p)
			if err != nil {
				b.Fatal(err)
			}
			if r.Store {
				tat, exists = r.TAT, true
			}
		}
	})
}

func BenchmarkThrottle(b *testing.B) {
	q := Quota{MaxBurst: 100, Count: 1_000_000, Period: 1e9}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var tat int64
		var exists bool
		now := base
		for pb.Next() {
			now += 1000
			r, err := Throttle(now, tat, exists, q, 1)
			if err != nil {
				b.Fatal(err)
			}
			if r.Store {
				tat, exists = r.TAT, true
			}
		}
	})
}

func BenchmarkRedis(b *testing.B) {
	p := GCRAParams{MaxBurst: 100, Tokens: 1_000_000, Period: 1, Quantity: 1}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var tat int64
		var exists bool
		now := base
		for pb.Next() {
			now += 1000
			r, err := Redis(now, tat, exists, p)
			if err != nil {
				b.Fatal(err)
			}
			if r.Store {
				tat, exists = r.TAT, true
			}
		}
	})
}

func BenchmarkParseCell(b *testing.B) {
	a := args("15", "30", "60", "1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCell(a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseGCRA(b *testing.B) {
	a := args("15", "30", "60.5", "TOKENS", "2")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseGCRA(a); err != nil {
			b.Fatal(err)
		}
	}
}
