// Package httpapi serves rate-limit decisions over HTTP, for the proxies in front of HTTP
// services and for clients that speak no RESP.
//
// A request's path: Server.ServeHTTP authenticates it (Basic auth, or a bearer token, in
// X-Throttled-Authorization or, on /v1/check, Authorization), reads what to decide (the JSON
// body of POST /v1/check, with CHECK's cost, peek, refund and priority; the policy in the
// path of /v1/auth/<policy>/..., the subject from the header its query names and the tier
// its priority= names or reads from a header, a header believed only from a trusted proxy:
// forwarded.go), and asks the Decider, which evaluates the policies as
// the CHECK command does: the same counters, TOPDENIED, deny events and ACL checks. The
// answer carries the decision in headers (RateLimit-Policy and RateLimit as
// draft-ietf-httpapi-ratelimit-headers defines them, Retry-After when denied and, unless
// turned off, X-RateLimit-Limit, -Remaining and -Reset) and, on /v1/check and on a denial,
// in a JSON body. Allowed is 200, denied 429 (or the status the auth URL's deny= asks for:
// nginx's auth_request takes only 2xx, 401 and 403), a bad request 400 with a JSON error
// naming the problem.
//
// The server's Decider is a CheckDecider (check.go): the request becomes a CHECK command,
// which the server runs as the request's user through a RunFunc, as a RESP client's would
// run, and CHECK's RESP2 reply becomes the Result.
//
// Serve bounds what one client can hold: header and body sizes, header and idle timeouts,
// and the connections served at once.
package httpapi
