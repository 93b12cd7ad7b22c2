package server

import (
	"errors"

	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/ratelimit"
)

// errPoliciesKey refuses a command on the policies' record: a DEL, SET or EXPIRE of it would
// drop every policy.
var errPoliciesKey = errors.New("'" + ratelimit.PoliciesKey + "' holds the policies: use the POLICY.* commands")

// reservedKey refuses a request for cmd that names the policies' record or the function
// libraries' as a key.
func reservedKey(cmd *cmdEntry, args [][]byte) error {
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.keyStep {
		switch string(args[i]) {
		case ratelimit.PoliciesKey:
			return errPoliciesKey
		case functionsKey:
			return errFunctionsKey
		}
	}
	return nil
}

// policyChanges are the policy verbs that change a limit: in @policy and @admin, not in
// @ratelimit (acl.go's categories).
var policyChanges = map[string]bool{"policy.set": true, "policy.del": true, "policy.override": true,
	"policy.allow": true, "policy.deny": true, "policy.unlist": true, "policy.reload": true}

// policyACLKey appends to dst the key a user's key patterns must allow for a policy verb:
// policy:<name> for the policy itself, policy:<name>:<subject> for one of its subjects
// (nil subject: none), the key CHECK decides on.
func policyACLKey(dst, name, subject []byte) []byte {
	dst = append(append(dst, ratelimit.PolicyKeyPrefix...), name...)
	if subject != nil {
		dst = append(append(dst, ':'), subject...)
	}
	return dst
}

// policySubjectVerbs are the policy verbs whose second argument is a subject.
var policySubjectVerbs = map[string]bool{"policy.override": true, "policy.allow": true, "policy.deny": true, "policy.unlist": true}

// isPolicyRecord reports whether a key SCAN or KEYS meets is the policies' record, or the
// function libraries'.
func isPolicyRecord(v keyspace.Value) bool {
	return v.Kind == keyspace.Policies || v.Kind == keyspace.Functions
}

// ReloadPolicies reads the config file's policies again (SIGHUP): with an error, naming the
// file and the line, the policies stay as they were.
func (s *Server) ReloadPolicies() error { return s.rl.ReloadPolicies() }
