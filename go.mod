module throttled

go 1.26.8

require (
	github.com/redis/go-redis/v9 v9.7.0
	github.com/stretchr/testify v1.10.0
	github.com/tidwall/redcon v1.6.2
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
