package command

import (
	"strings"

	"github.com/throttledhq/throttled/resp"
)

// Argument is one argument of a command's syntax, for COMMAND DOCS.
type Argument struct {
	Name     string
	Type     string // key, string, integer, pure-token, oneof, block
	Token    string // the keyword before a value: COST in "[COST n]"
	Optional bool
	Multiple bool
	Children []Argument
}

// ParseSyntax turns "key value [NX|XX] [EX seconds] [COST n] [PEEK] [key ...]"
// into arguments. It understands what the table's syntax lines use:
// words, [optional] groups, a|b alternatives and "..." repetition.
func ParseSyntax(syntax string) []Argument {
	var out []Argument
	for _, group := range SplitGroups(syntax) {
		if group == "..." && len(out) > 0 { // "a|b ...": the argument before repeats
			out[len(out)-1].Multiple = true
			continue
		}
		optional := strings.HasPrefix(group, "[")
		body := strings.TrimSuffix(strings.TrimPrefix(group, "["), "]")
		multiple := strings.HasSuffix(body, "...")
		body = strings.TrimSpace(strings.TrimSuffix(body, "..."))
		arg := groupArgument(body)
		arg.Optional, arg.Multiple = optional, multiple
		out = append(out, arg)
	}
	return out
}

func groupArgument(body string) Argument {
	if strings.Contains(body, "|") {
		arg := Argument{Name: strings.ToLower(strings.ReplaceAll(body, "|", "-")), Type: "oneof"}
		for _, alt := range strings.Split(body, "|") {
			arg.Children = append(arg.Children, groupArgument(alt))
		}
		if len(arg.Name) > 40 {
			arg.Name = "condition"
		}
		return arg
	}
	words := strings.Fields(body)
	switch {
	case len(words) == 1 && isToken(words[0]):
		return Argument{Name: strings.ToLower(words[0]), Type: "pure-token", Token: words[0]}
	case len(words) == 2 && isToken(words[0]):
		arg := valueArgument(words[1])
		arg.Token = words[0]
		return arg
	case len(words) == 1:
		return valueArgument(words[0])
	}
	arg := Argument{Name: strings.ReplaceAll(body, " ", "-"), Type: "block"}
	for _, w := range words {
		arg.Children = append(arg.Children, groupArgument(w))
	}
	return arg
}

func valueArgument(name string) Argument {
	switch name {
	case "key":
		return Argument{Name: name, Type: "key"}
	case "n", "count", "max_burst", "count_per_period", "tokens_per_period", "seconds", "milliseconds",
		"unix-time-seconds", "unix-time-milliseconds", "increment", "decrement", "cursor", "quantity", "index":
		return Argument{Name: name, Type: "integer"}
	}
	return Argument{Name: name, Type: "string"}
}

func isToken(w string) bool { return w == strings.ToUpper(w) && strings.ToLower(w) != w }

// WriteArguments writes args as COMMAND DOCS's "arguments": a map each, children nested.
func WriteArguments(w *resp.Writer, args []Argument) {
	w.Array(len(args))
	for _, a := range args {
		fields := 2
		if a.Token != "" {
			fields++
		}
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		if len(flags) > 0 {
			fields++
		}
		if len(a.Children) > 0 {
			fields++
		}
		w.Map(fields)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.Token != "" {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if len(flags) > 0 {
			w.BulkString("flags")
			w.SetHeader(len(flags))
			for _, f := range flags {
				w.Simple(f)
			}
		}
		if len(a.Children) > 0 {
			w.BulkString("arguments")
			WriteArguments(w, a.Children)
		}
	}
}
