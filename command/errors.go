package command

import (
	"errors"
	"strings"

	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
)

// Error is an error whose reply starts with its own code instead of ERR: NOPERM, BUSY...
type Error struct{ Code, Msg string }

func (e *Error) Error() string { return e.Code + " " + e.Msg }

// The errors more than one family replies.
var (
	// ErrReadOnly is a replica's answer to a command that would change state.
	ErrReadOnly = &Error{Code: "READONLY", Msg: "You can't write against a read only replica."}
	// ErrSyntax is an argument list that does not parse.
	ErrSyntax = errors.New("syntax error")
	// ErrNotInteger is an argument or value that is not a 64-bit integer.
	ErrNotInteger = errors.New("value is not an integer or out of range")
	// ErrNoSuchKey is RENAME's missing source, LSET's missing list.
	ErrNoSuchKey = errors.New("no such key")
	// ErrOverflow is an increment that leaves int64.
	ErrOverflow = errors.New("increment or decrement would overflow")
	// ErrNotFloat is an argument or value that is not a number as Redis's string2ld reads one.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrFloatOverflow is a float increment whose result is infinite or not a number.
	ErrFloatOverflow = errors.New("increment would produce NaN or Infinity")
	// ErrKeysTooMany is a numkeys past the arguments (EVAL's, SINTERCARD's): Redis's text.
	ErrKeysTooMany = errors.New("Number of keys can't be greater than number of args")
)

// Truncate is at most n bytes of a client's b, safe to put in an error line.
func Truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return Sanitize(string(b))
}

// Sanitize keeps a client's bytes from breaking a reply line.
func Sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// ErrorText turns a handler's error into the RESP error line's text; the
// one place where Go errors become what clients read.
func ErrorText(err error) string {
	var ge *gcra.Error
	var ce *Error
	switch {
	case errors.Is(err, keyspace.ErrWrongType):
		return "WRONGTYPE Operation against a key holding the wrong kind of value"
	case errors.As(err, &ge):
		return ge.Text
	case errors.As(err, &ce):
		return ce.Error()
	}
	return "ERR " + err.Error()
}

// ExecAbort is EXEC's reply when EXEC itself is refused (BUSY, OOM, NOREPLICAS): Redis
// discards the transaction and names the refusal.
func ExecAbort(err error) error {
	return &Error{Code: "EXECABORT", Msg: "Transaction discarded because of: " + ErrorText(err)}
}

// UnknownCommand is Redis's error for a name not in the table.
func UnknownCommand(args [][]byte) error {
	var b strings.Builder
	b.WriteString("unknown command '")
	b.WriteString(Truncate(args[0], 128))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 1024 {
			break
		}
		b.WriteString("'")
		b.WriteString(Truncate(a, 128))
		b.WriteString("' ")
	}
	return errors.New(b.String())
}

// UnknownSubcommand is Redis's error for CLIENT, CONFIG or COMMAND with an unknown subcommand.
func UnknownSubcommand(sub []byte, parent string) error {
	return errors.New("unknown subcommand '" + Truncate(sub, 128) + "'. Try " + parent + " HELP.")
}
