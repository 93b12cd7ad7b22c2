package server

import (
	"errors"

	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/scripting/functions"
)

// errPoliciesKey refuses a command on the policies' record: a DEL, SET or EXPIRE of it would
// drop every policy.
var errPoliciesKey = errors.New("'" + ratelimit.PoliciesKey + "' holds the policies: use the POLICY.* commands")

// functionsKey is the reserved key of the function libraries' record (scripting/functions).
const functionsKey = functions.Key

// errFunctionsKey refuses a command on the libraries' record.
var errFunctionsKey = errors.New("'" + functionsKey + "' holds the function libraries: use the FUNCTION commands")

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

// ReloadPolicies reads the config file's policies again (SIGHUP): with an error, naming the
// file and the line, the policies stay as they were.
func (s *Server) ReloadPolicies() error { return s.rl.ReloadPolicies() }
