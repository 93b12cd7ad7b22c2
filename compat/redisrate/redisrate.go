//go:build never

// Package redisrate is a module of its own that pins github.com/go-redis/redis_rate/v10 at
// v10.0.1 (go.mod, go.sum): compat's TestRedisRateTestFile builds that module's own tests,
// unchanged, from the module cache, with this directory as the main module. The import
// keeps `go mod tidy` from dropping the requirement; the file is never built.
package redisrate

import _ "github.com/go-redis/redis_rate/v10"
