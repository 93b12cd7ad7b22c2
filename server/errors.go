package server

import (
	"github.com/throttledhq/throttled/command"
)

var (
	// errNoAuth is a command before AUTH on a server with requirepass.
	errNoAuth = &command.Error{Code: "NOAUTH", Msg: "Authentication required."}
	// errWrongPass is AUTH with the wrong password.
	errWrongPass = &command.Error{Code: "WRONGPASS", Msg: "invalid username-password pair or user is disabled."}
	// errNoProto is HELLO with a protocol version other than 2 or 3.
	errNoProto = &command.Error{Code: "NOPROTO", Msg: "unsupported protocol version"}
)
