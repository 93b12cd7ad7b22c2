package server

import (
	"errors"
	"strings"

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

// unknownCommand is Redis's error for a name not in the table.
func unknownCommand(args [][]byte) error {
	var b strings.Builder
	b.WriteString("unknown command '")
	b.WriteString(command.Truncate(args[0], 128))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 1024 {
			break
		}
		b.WriteString("'")
		b.WriteString(command.Truncate(a, 128))
		b.WriteString("' ")
	}
	return errors.New(b.String())
}

// unknownSubcommand is Redis's error for CLIENT, CONFIG or COMMAND with an unknown subcommand.
func unknownSubcommand(sub []byte, parent string) error {
	return errors.New("unknown subcommand '" + command.Truncate(sub, 128) + "'. Try " + parent + " HELP.")
}
