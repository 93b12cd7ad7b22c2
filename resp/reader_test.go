package resp

import (
	"bytes"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the request parser: it never panics,
// never returns arguments it did not read, and never claims more bytes than it has.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"*1\r\n$4\r\nPING\r\n", "PING\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "*1\r\n$9223372036854775807\r\n",
		"*-1\r\n", "*0\r\n", "\"a\\x41\" 'b'\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk", "$5\r\nhello\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), DefaultMaxBulk)
		for i := 0; i < 1000; i++ {
			args, err := r.Next()
			if err != nil {
				return
			}
			for _, a := range args {
				if len(a) > len(data) {
					t.Fatalf("argument of %d bytes from %d bytes of input", len(a), len(data))
				}
			}
		}
	})
}

func TestReplyReader(t *testing.T) {
	r := ReplyReader{B: []byte("*2\r\n:-1\r\n$2\r\nok\r\n")}
	if n := r.Header('*'); n != 2 || r.Bad {
		t.Fatalf("array header %d, bad %v", n, r.Bad)
	}
	if n := r.Header(':'); n != -1 || r.Bad {
		t.Fatalf("integer %d, bad %v", n, r.Bad)
	}
	if b := r.Bulk(); string(b) != "ok" || r.Bad || len(r.B) != 0 {
		t.Fatalf("bulk %q, bad %v, left %q", b, r.Bad, r.B)
	}
	for _, in := range []string{":1\r\n", "$5\r\nok\r\n", "$x\r\n", "$\r\n", ""} {
		r := ReplyReader{B: []byte(in)}
		r.Bulk()
		if !r.Bad {
			t.Fatalf("%q read as a bulk string", in)
		}
	}
}
