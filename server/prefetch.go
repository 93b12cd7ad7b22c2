package server

// defaultPrefetchBatch is Redis 8's prefetch-batch-max-size.
const defaultPrefetchBatch = 16

// prefetchKeys shows the keyspace the keys of the requests one read brought, first being
// the one about to run, so that the cache misses of their lookups overlap
// (keyspace.Prefetch): with a pipeline, each request would otherwise wait for its own. At
// most prefetch-batch-max-size keys; none when it is below 2, as in Redis. The requests
// after first are parsed here once (resp.Reader.ParseAhead): they run from what this
// parse left. One that does not parse ends the batch, its error left to the parse that
// runs it.
func (c *client) prefetchKeys(first [][]byte) {
	most := int(c.s.prefetchBatch.Load())
	if most < 2 {
		return
	}
	keys := c.requestKeys(c.aheadKeys[:0], first)
	for len(keys) < most {
		args, ok := c.rd.ParseAhead()
		if !ok {
			break
		}
		keys = c.requestKeys(keys, args)
	}
	if len(keys) > 1 {
		c.s.ks.Prefetch(keys[:min(len(keys), most)])
	}
	clear(keys) // they alias the read buffer
	c.aheadKeys = keys[:0]
}

// requestKeys appends the keys of request args to keys, if it names a command and has its
// arity.
func (c *client) requestKeys(keys [][]byte, args [][]byte) [][]byte {
	if len(args) == 0 {
		return keys
	}
	if cmd := c.s.lookup(c, args[0]); cmd != nil && cmd.arityOK(len(args)) {
		return appendKeys(keys, cmd, args)
	}
	return keys
}
