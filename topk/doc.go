// Package topk finds the most frequent keys of a stream in fixed memory: the server records
// each denied key, and TOPDENIED and the metrics read the heaviest.
//
// It is the Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005): k counters; a key
// already counted adds to its counter; a new key takes over the smallest counter and counts
// from that counter's value plus one, remembering the value it inherited as its error. With
// N recordings in all, every key whose true count exceeds N/k holds a counter, and each
// counter overestimates its key's true count by at most its error, itself at most N/k.
//
// A Top is split into shards by a hash of the key, each with its own lock and counters: a key
// lives in one shard only, so the shards' union keeps Space-Saving's guarantee with N and k
// those of the shard. The window is recent: the counters start afresh every period, and a
// query adds the current period's counts to the last period's, so it covers between one and
// two periods. Recording copies the key into storage held since New: it allocates nothing.
package topk
