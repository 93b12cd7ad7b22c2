module github.com/throttledhq/throttled/compat/redisrate

go 1.26.8

require github.com/go-redis/redis_rate/v10 v10.0.1

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/redis/go-redis/v9 v9.0.2 // indirect
)
