package policy

import (
	"strings"
	"testing"
)

// FuzzDecode: no bytes crash Decode, and what it accepts encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(Table{"api": {Name: "api", Args: []string{"THROTTLE", "1", "2", "3"}, Soft: 0.5,
		Entries: []Entry{{Kind: Deny, Subject: "10.0.0.0/8", Expire: 7}}}}.Encode(0))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(tab.Encode(0))
		if err != nil || len(again) != len(tab) {
			t.Fatalf("a decoded table does not decode again: %v", err)
		}
	})
}

// FuzzParse: no words crash the parsers, and what they accept has a valid name and subject.
func FuzzParse(f *testing.F) {
	f.Add("api THROTTLE 1 2 3 SOFT 0.5 SHADOW")
	f.Add("10.0.0.0/8 EX 10")
	f.Add("m* THROTTLE 1 2 3 EX 9223372036")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if p, err := ParsePolicy(args); err == nil {
			if !ValidName([]byte(p.Name)) || p.Soft < 0 || p.Soft > 1 {
				t.Fatalf("accepted %q", line)
			}
		}
		for _, k := range []EntryKind{Override, Allow, Deny} {
			e, err := ParseEntry(k, args, 1_700_000_000e9)
			if err != nil {
				continue
			}
			if CheckSubject(e.Subject) != nil || e.Expire < 0 {
				t.Fatalf("accepted %q as %v", line, k)
			}
			l := NewLists([]Entry{e})
			l.Match([]byte(e.Subject), 0)
		}
	})
}
