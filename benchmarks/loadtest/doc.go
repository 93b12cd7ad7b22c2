// Package loadtest is the client side of benchmarks/cmd/loadgen, kept cheap so that the load
// tool takes as little CPU from the servers as it can: requests are RESP encoded once (Encode),
// replies are parsed from a bufio.Reader without allocating (Reader.Next), each connection
// records the round trip of every pipeline into its own log-linear Histogram, and Run merges
// them into a Result.
package loadtest
