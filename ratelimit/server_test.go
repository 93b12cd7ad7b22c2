package ratelimit_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// do and doErr are testserver's Do and DoErr, short as the tests call them on every line.
var (
	do    = testserver.Do
	doErr = testserver.DoErr
)

// realClock gives the server the real clock, for the tests that hammer a key from many
// connections for a while and bound what was admitted by the time that passed.
func realClock(c *server.Config) { c.Now = nil }

// ints is a reply of integers as go-redis reads it.
func ints(v ...int64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

// check runs CHECK and returns its RESP2 reply: five numbers and the status.
func check(t *testing.T, rdb *redis.Client, args ...any) []any {
	t.Helper()
	return do(t, rdb, append([]any{"CHECK"}, args...)...).([]any)
}

// infoField reads one field of an INFO section.
func infoField(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:(.*)\r$`).FindStringSubmatch(do(t, rdb, "INFO", section).(string))
	require.NotNil(t, m, field)
	return m[1]
}

// infoInt reads one integer field of INFO throttle.
func infoInt(t *testing.T, rdb *redis.Client, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoField(t, rdb, "throttle", field), 10, 64)
	require.NoError(t, err)
	return n
}
