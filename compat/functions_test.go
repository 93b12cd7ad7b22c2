package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// fnLibrary is a library of a counter (a write) and a read (no-writes), as FCALL_RO calls on
// a replica.
func fnLibrary(name string) string {
	return fmt.Sprintf("#!lua name=%s\n"+
		"redis.register_function('%s_incr', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\n"+
		"redis.register_function{function_name='%s_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n",
		name, name, name)
}

// libraryNames lists the libraries rdb has loaded, by FUNCTION LIST.
func libraryNames(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	libs, err := rdb.FunctionList(context.Background(), redis.FunctionListQuery{}).Result()
	require.NoError(t, err)
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	return names
}

// TestFunctionsSurviveKill9: a library loaded (and one replaced, one deleted) survives a
// kill -9 and a restart, and its functions run.
func TestFunctionsSurviveKill9(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := launch(t, dir, "--appendfsync", "always")
	rdb := p.client()
	require.NoError(t, rdb.FunctionLoad(ctx, fnLibrary("a")).Err())
	require.NoError(t, rdb.FunctionLoad(ctx, fnLibrary("b")).Err())
	require.NoError(t, rdb.FunctionLoad(ctx, fnLibrary("gone")).Err())
	require.NoError(t, rdb.FunctionDelete(ctx, "gone").Err())
	require.NoError(t, rdb.FunctionLoadReplace(ctx, "#!lua name=b\nredis.register_function('b_v2', function() return 'v2' end)").Err())
	require.Equal(t, int64(5), rdb.FCall(ctx, "a_incr", []string{"n"}, 5).Val())
	rdb.Close()
	p.kill9(t)

	p = launch(t, dir, "--appendfsync", "always")
	rdb = p.client()
	defer rdb.Close()
	require.ElementsMatch(t, []string{"a", "b"}, libraryNames(t, rdb))
	require.Equal(t, int64(7), rdb.FCall(ctx, "a_incr", []string{"n"}, 2).Val())
	require.Equal(t, "v2", rdb.FCall(ctx, "b_v2", nil).Val())
	require.Equal(t, "7", rdb.FCallRO(ctx, "a_get", []string{"n"}).Val())
	require.Equal(t, int64(1), rdb.DBSize(ctx).Val(), "one key, n: the libraries are no key")

	// FUNCTION FLUSH is durable too.
	require.NoError(t, rdb.FunctionFlush(ctx).Err())
	p.stop(t)
	p = launch(t, dir)
	rdb2 := p.client()
	defer rdb2.Close()
	require.Empty(t, libraryNames(t, rdb2))
}

// TestFunctionsOnReplicas: a replica has the primary's libraries after its full sync, and
// after each later FUNCTION LOAD, DELETE, RESTORE and FLUSH on the primary; FCALL_RO runs
// there, a function that writes gets READONLY, and FLUSHALL keeps the libraries.
func TestFunctionsOnReplicas(t *testing.T) {
	ctx := context.Background()
	primary := launch(t, t.TempDir())
	p := primary.client()
	defer p.Close()
	require.NoError(t, p.FunctionLoad(ctx, fnLibrary("a")).Err())
	require.NoError(t, p.FCall(ctx, "a_incr", []string{"n"}, 3).Err())

	dir := t.TempDir()
	replica := replicaOf(t, dir, primary)
	r := replica.client()
	defer r.Close()
	synced := func(what string) {
		t.Helper()
		require.Equal(t, int64(1), p.Do(ctx, "WAIT", 1, 10000).Val(), what)
		waitFor(t, 10*time.Second, what, func() bool {
			return fmt.Sprint(libraryNames(t, r)) == fmt.Sprint(libraryNames(t, p))
		})
	}
	synced("the full sync carries the libraries")
	require.Equal(t, []string{"a"}, libraryNames(t, r))
	require.Equal(t, "3", r.FCallRO(ctx, "a_get", []string{"n"}).Val())
	require.Equal(t, "3", r.FCall(ctx, "a_get", []string{"n"}).Val(), "a no-writes function runs with FCALL too")
	require.EqualError(t, r.FCall(ctx, "a_incr", []string{"n"}, 1).Err(), "READONLY You can't write against a read only replica.")
	require.EqualError(t, r.FunctionLoad(ctx, fnLibrary("x")).Err(), "READONLY You can't write against a read only replica.")

	require.NoError(t, p.FunctionLoad(ctx, fnLibrary("b")).Err())
	synced("a later FUNCTION LOAD")
	require.Equal(t, []string{"a", "b"}, libraryNames(t, r))
	require.Equal(t, redis.Nil, r.FCallRO(ctx, "b_get", []string{"m"}).Err())

	dump, err := p.FunctionDump(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, p.FunctionDelete(ctx, "a").Err())
	synced("FUNCTION DELETE")
	require.Equal(t, []string{"b"}, libraryNames(t, r))
	require.EqualError(t, r.FCallRO(ctx, "a_get", []string{"n"}).Err(), "ERR Function not found")

	require.NoError(t, p.FlushAll(ctx).Err())
	require.EqualError(t, p.FunctionRestore(ctx, dump).Err(), "ERR Library b already exists")
	require.NoError(t, p.Do(ctx, "FUNCTION", "RESTORE", dump, "REPLACE").Err())
	synced("FUNCTION RESTORE")
	require.Equal(t, []string{"a", "b"}, libraryNames(t, r), "FLUSHALL kept b")
	require.Equal(t, redis.Nil, r.FCallRO(ctx, "a_get", []string{"n"}).Err(), "FLUSHALL emptied the keys")

	require.NoError(t, p.FunctionFlush(ctx).Err())
	synced("FUNCTION FLUSH")
	require.Empty(t, libraryNames(t, r))

	// A replica restarted on its directory loads what it had, and follows on.
	require.NoError(t, p.FunctionLoad(ctx, fnLibrary("c")).Err())
	synced("c")
	replica.stop(t)
	require.NoError(t, p.FunctionLoad(ctx, fnLibrary("d")).Err())
	replica = launch(t, dir, dir+".conf")
	r2 := replica.client()
	defer r2.Close()
	r = r2
	synced("after the replica's restart")
	require.Equal(t, []string{"c", "d"}, libraryNames(t, r2))
	require.Equal(t, redis.Nil, r2.FCallRO(ctx, "d_get", []string{"x"}).Err())
}
