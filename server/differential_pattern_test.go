package server

import (
	"math/rand/v2"
	"testing"
)

// Lua 5.1's patterns in the scripts' differential test: random subjects and patterns made
// of the pieces below (classes, sets, anchors, captures, back references, %b, %f, a NUL,
// and malformed ones), each given to string.find, match, gsub with a replacement string
// and a function, and gmatch; the replies, errors included, must be Redis's bytes.

// patternPieces are what the random patterns are made of.
var patternPieces = []string{"a", "b", "(", ")", "%", "[", "]", "^", "$", ".", "*", "+", "-", "?", "%a", "%d",
	"%b()", "%f[%a]", "%1", "()", "[^a]", "[a-c]", "%s", "%W", "\x00", " ", "1"}

// patternSubject are the characters of the random subjects.
var patternSubject = []string{"a", "b", "c", "(", ")", " ", "1", "A", "-", "\x00", "["}

// patternScript runs each pattern function on ARGV[1] and the pattern ARGV[2].
const patternScript = `local s, p = ARGV[1], ARGV[2]
local r = {pcall(string.find, s, p)}
r[#r + 1] = select(2, pcall(string.match, s, p, 2))
r[#r + 1] = select(2, pcall(string.gsub, s, p, '<%0%1>'))
r[#r + 1] = select(2, pcall(string.gsub, s, p, function(...) return select('#', ...) end, 3))
r[#r + 1] = select(2, pcall(function() local n = '' for a, b in s:gmatch(p) do n = n .. tostring(a) .. tostring(b) .. ',' if #n > 200 then break end end return n end))
return r`

// genPatterns draws a subject and a pattern.
func genPatterns(r *rand.Rand) diffCmd {
	var s, p string
	for j := r.IntN(6); j >= 0; j-- {
		p += patternPieces[r.IntN(len(patternPieces))]
	}
	for j := r.IntN(12); j >= 0; j-- {
		s += patternSubject[r.IntN(len(patternSubject))]
	}
	return cmd("EVAL", patternScript, "0", s, p)
}

func TestDifferentialPatterns(t *testing.T) { runDifferential(t, genPatterns) }
