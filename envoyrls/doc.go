// Package envoyrls is throttled's side of Envoy's global rate limiting: the gRPC service
// envoy.service.ratelimit.v3.RateLimitService over a configuration written as
// envoyproxy/ratelimit's users write theirs (YAML, one domain a file).
//
// A configuration's path: Load reads the file or the directory's files (config.go) into a
// tree of descriptors per domain, and makes each descriptor that has a rate_limit a Rule and
// a policy (policy.Policy, named "rls." and its path), which the service hands to the server
// (Decider.SetPolicies) so that CHECK, POLICY.GET, overrides and allow and deny lists see it
// as they see the config file's. Reload and Watch read it again; a bad file keeps the old
// configuration and the error names the file and the line.
//
// A request's path: ShouldRateLimit takes the domain's priority_key entry out of each
// descriptor (its value is the descriptor's tier), matches the rest against its domain's
// tree (match.go: at each level key and value, then the longest wildcard, then the key alone;
// the rule is the one at the level of the descriptor's last entry), drops the rules that
// another matched rule replaces, and hands the rest to Decider.Decide, the server's CHECK
// path, which evaluates them all or nothing and counts them as CHECK's. A descriptor with
// is_negative_hits gives its hits_addend (or the request's) back instead, with REFUND's
// semantics per algorithm (never past full), and its refund stands whatever the others
// decide: it settles a request that passed before (an AI gateway's reservation, settled
// with apply_on_stream_done once the tokens used are known). The decisions become
// the statuses, the overall code and, when the domain asks, the RateLimit headers. A
// descriptor whose subject is longer than ratelimit.MaxSubject is OVER_LIMIT without a
// decision (the others are only looked at), never an error, which an Envoy that fails open
// would take for a pass.
//
// Before that, Auth's interceptor finds the request's ACL user (auth.go: the authorization
// metadata, in http-port's forms, or a client certificate; credentials verified lately are
// remembered until the ACL changes) and leaves it in the context (WithUser). The server's
// Decider is a CheckDecider (decide.go), which hands the items and that user to the server's
// CHECK path, a CheckFunc. GRPCServer builds grpc-port's server around the service, and
// JSONHandler puts ServeJSON behind http-port's users.
//
// The package knows nothing of RESP or of the keyspace: it never imports the server.
package envoyrls
