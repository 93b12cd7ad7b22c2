package datatype_test

import "github.com/throttledhq/throttled/internal/testserver"

// do and doErr are testserver's Do and DoErr, short as the tests call them on every line.
var (
	do    = testserver.Do
	doErr = testserver.DoErr
)

// toMap reads a map reply: a RESP3 map, or RESP2's flat array of pairs.
func toMap(v any) map[any]any {
	switch m := v.(type) {
	case map[any]any:
		return m
	case []any:
		out := make(map[any]any)
		for i := 0; i+1 < len(m); i += 2 {
			out[m[i]] = m[i+1]
		}
		return out
	}
	return nil
}
