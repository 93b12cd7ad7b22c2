// Package resp reads requests and writes replies in the Redis protocol, RESP2 and RESP3.
//
// A request's path: a connection's Reader fills its buffer from the socket (Next fills as
// it needs) and parses one request at a time into arguments that are slices of that buffer,
// valid until the next call: a multibulk request ("*2\r\n$3\r\nGET\r\n...") or an inline
// one ("GET k"). A request that arrives over many reads is parsed as its bytes come, never
// again from its start (Redis's multibulklen and bulklen): the reader keeps how far it got,
// and its buffer grows with the bytes sent, not the lengths announced, then shrinks back
// once the big request has run. Every length is bounded (MaxMultibulk, MaxInline, the bulk
// limit proto-max-bulk-len, and tighter ones before authentication), so that no request can
// make the server buffer more than it allows; a malformed one is a ProtocolError, after
// which the server replies and closes the connection, as Redis does. The handler then
// writes its reply with a Writer, which appends to a buffer the server sends once the
// pipeline's requests have run; a Writer knows the connection's protocol and writes maps,
// sets, doubles and nulls as RESP3 has them or as RESP2 approximates them.
package resp
