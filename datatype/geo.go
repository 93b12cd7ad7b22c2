package datatype

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/geo"
	"github.com/throttledhq/throttled/keyspace"
)

// The geospatial commands keep points in sorted sets, each member's score its 52-bit
// geohash (package geo): GEOADD is ZADD of those scores, the searches read the score
// ranges of the boxes around their centre, and ZRANGE and the like read the same keys.

var (
	// errGeoUnit is a distance's unit that is none of Redis's.
	errGeoUnit = errors.New("unsupported unit provided. please use M, KM, FT, MI")
	// errGeoMember is a search around a member the key does not hold.
	errGeoMember = errors.New("could not decode requested zset member")
	// errGeoRadius is a negative radius.
	errGeoRadius = errors.New("radius cannot be negative")
	// errGeoBox is a negative width or height.
	errGeoBox = errors.New("height or width cannot be negative")
	// errGeoCount is COUNT below 1.
	errGeoCount = errors.New("COUNT must be > 0")
	// errGeoAny is ANY without COUNT.
	errGeoAny = errors.New("the ANY argument requires COUNT argument")
)

func (dt *Family) geoCommands() []*command.Spec {
	ro := []command.KeySpec{{Begin: 1, Flags: "RO access"}}
	return []*command.Spec{
		{Name: "geoadd", Arity: -5, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", Syntax: "key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]", Handler: dt.cmdGeoAdd},
		{Name: "geodist", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Returns the distance between two members of a geospatial index.", Syntax: "key member1 member2 [M|KM|FT|MI]", Handler: dt.cmdGeoDist},
		{Name: "geohash", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Returns members from a geospatial index as geohash strings.", Syntax: "key [member [member ...]]", Handler: dt.geoMembersHandler(true)},
		{Name: "geopos", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Returns the longitude and latitude of members from a geospatial index.", Syntax: "key [member [member ...]]", Handler: dt.geoMembersHandler(false)},
		{Name: "georadius", Arity: -6, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: ro, KeysOf: geoStoreKeys(6), ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", Syntax: "key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key|STOREDIST key]", Handler: dt.geoSearchHandler(geoCoords)},
		{Name: "georadius_ro", Arity: -6, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "3.2.10", Summary: "Returns members from a geospatial index that are within a distance from a coordinate.", Syntax: "key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC]", Handler: dt.geoSearchHandler(geoCoords | geoNoStore)},
		{Name: "georadiusbymember", Arity: -5, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: ro, KeysOf: geoStoreKeys(5), ACL: "geo", Group: "geo", Since: "3.2.0", Summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result.", Syntax: "key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key|STOREDIST key]", Handler: dt.geoSearchHandler(geoMember)},
		{Name: "georadiusbymember_ro", Arity: -5, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "3.2.10", Summary: "Returns members from a geospatial index that are within a distance from a member.", Syntax: "key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC]", Handler: dt.geoSearchHandler(geoMember | geoNoStore)},
		{Name: "geosearch", Arity: -7, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: ro, ACL: "geo", Group: "geo", Since: "6.2.0", Summary: "Queries a geospatial index for members inside an area of a box or a circle.", Syntax: "key FROMMEMBER member|FROMLONLAT longitude latitude BYRADIUS radius M|KM|FT|MI|BYBOX width height M|KM|FT|MI [ASC|DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]", Handler: dt.geoSearchHandler(geoSearch)},
		{Name: "geosearchstore", Arity: -8, Flags: "write denyoom", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}, {Begin: 2, Flags: "RO access"}}, ACL: "geo", Group: "geo", Since: "6.2.0", Summary: "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", Syntax: "destination source FROMMEMBER member|FROMLONLAT longitude latitude BYRADIUS radius M|KM|FT|MI|BYBOX width height M|KM|FT|MI [ASC|DESC] [COUNT count [ANY]] [STOREDIST]", Handler: dt.geoSearchHandler(geoSearch | geoSearchStore)},
	}
}

// geoStoreKeys returns GEORADIUS's keys: its source, and the key after STORE or STOREDIST
// among the arguments from base on.
func geoStoreKeys(base int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		keys := [][]byte{args[1]}
		for i := base; i+1 < len(args); i++ {
			if command.EqualFold(args[i], "store") || command.EqualFold(args[i], "storedist") {
				keys = append(keys, args[i+1])
				i++
			}
		}
		return keys
	}
}

// geoFloat reads a number as Redis's getDoubleFromObject; errText names it in the error.
func geoFloat(b []byte, errText string) (float64, error) {
	f, ok := collection.ParseScore(b)
	if !ok {
		if errText == "" {
			return 0, command.ErrNotFloat
		}
		return 0, errors.New(errText)
	}
	return f, nil
}

// geoLongLat reads a longitude and a latitude, which must be within what can be indexed.
func geoLongLat(args [][]byte) (x, y float64, err error) {
	if x, err = geoFloat(args[0], ""); err != nil {
		return 0, 0, err
	}
	if y, err = geoFloat(args[1], ""); err != nil {
		return 0, 0, err
	}
	if x < geo.LongMin || x > geo.LongMax || y < geo.LatMin || y > geo.LatMax {
		return 0, 0, fmt.Errorf("invalid longitude,latitude pair %f,%f", x, y)
	}
	return x, y, nil
}

// geoUnit is the metres in a unit of M, KM, FT or MI.
func geoUnit(b []byte) (float64, error) {
	switch {
	case command.EqualFold(b, "m"):
		return 1, nil
	case command.EqualFold(b, "km"):
		return 1000, nil
	case command.EqualFold(b, "ft"):
		return 0.3048, nil
	case command.EqualFold(b, "mi"):
		return 1609.34, nil
	}
	return 0, errGeoUnit
}

// appendFixed4 appends d with four decimals, rounded half to even, as Redis's
// fixedpoint_d2string writes a distance.
func appendFixed4(dst []byte, d float64) []byte {
	return strconv.AppendFloat(dst, math.RoundToEven(d*1e4)/1e4, 'f', 4, 64)
}

// geoDistance replies a distance as a bulk string of four decimals, in both protocols.
func geoDistance(c *command.Ctx, d float64) {
	var buf [32]byte
	c.W.Bulk(appendFixed4(buf[:0], d))
}

// geoCoord replies a coordinate as Redis's addReplyHumanLongDouble: %.17Lf without its
// trailing zeros, a bulk string in RESP2, a double in RESP3.
func geoCoord(c *command.Ctx, f float64) {
	var buf [48]byte
	b := strconv.AppendFloat(buf[:0], f, 'f', 17, 64)
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	b = bytesTrimDot(b)
	if string(b) == "-0" {
		b = b[1:]
	}
	if c.W.Proto == 3 {
		c.W.B = append(append(append(c.W.B, ','), b...), '\r', '\n')
		return
	}
	c.W.Bulk(b)
}

func bytesTrimDot(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '.' {
		return b[:len(b)-1]
	}
	return b
}

// GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]: ZADD
// of the members at their geohashes, as Redis runs it.
func (dt *Family) cmdGeoAdd(c *command.Ctx, args [][]byte) error {
	i, nx, xx := 2, false, false
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case command.EqualFold(a, "nx"):
			nx = true
		case command.EqualFold(a, "xx"):
			xx = true
		case command.EqualFold(a, "ch"):
		default:
			goto points
		}
	}
points:
	if (len(args)-i)%3 != 0 || nx && xx {
		return command.ErrSyntax
	}
	zargs := append([][]byte{[]byte("zadd")}, args[1:i]...)
	for j := i; j < len(args); j += 3 {
		x, y, err := geoLongLat(args[j : j+2])
		if err != nil {
			return err
		}
		zargs = append(zargs, strconv.AppendUint(nil, uint64(geo.Score(x, y)), 10), args[j+2])
	}
	return dt.zadd(c, zargs, false)
}

// GEODIST key member1 member2 [M|KM|FT|MI]
func (dt *Family) cmdGeoDist(c *command.Ctx, args [][]byte) error {
	unit := 1.0
	switch {
	case len(args) == 5:
		var err error
		if unit, err = geoUnit(args[4]); err != nil {
			return err
		}
	case len(args) > 5:
		return command.ErrSyntax
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	s1, ok1 := zscore(v, args[2])
	s2, ok2 := zscore(v, args[3])
	if !ok || !ok1 || !ok2 {
		c.W.Null()
		return nil
	}
	x1, y1 := geo.Decode(s1)
	x2, y2 := geo.Decode(s2)
	geoDistance(c, geo.Distance(x1, y1, x2, y2)/unit)
	return nil
}

// geoMembersHandler is GEOHASH key [member ...] (hash) and GEOPOS key [member ...]: one
// reply a member, null for one the key does not hold.
func (dt *Family) geoMembersHandler(hash bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.zsetLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		c.W.Array(len(args) - 2)
		for _, m := range args[2:] {
			var s float64
			found := false
			if ok {
				s, found = zscore(v, m)
			}
			switch {
			case !found && hash:
				c.W.Null()
			case !found:
				c.W.NullArray()
			case hash:
				c.W.BulkString(geo.String11(s))
			default:
				x, y := geo.Decode(s)
				c.W.Array(2)
				geoCoord(c, x)
				geoCoord(c, y)
			}
		}
		return nil
	}
}

// The search commands' kinds, Redis's georadiusGeneric flags.
const (
	geoCoords      = 1 << iota // around a longitude and latitude (GEORADIUS)
	geoMember                  // around a member (GEORADIUSBYMEMBER)
	geoNoStore                 // no STORE or STOREDIST (the _RO forms)
	geoSearch                  // GEOSEARCH's arguments
	geoSearchStore             // GEOSEARCHSTORE: STOREDIST without a key
)

// geoPoint is a search's match.
type geoPoint struct {
	member     []byte
	x, y, dist float64
	score      float64
}

// geoSearchHandler is GEORADIUS, GEORADIUSBYMEMBER, their _RO forms, GEOSEARCH and
// GEOSEARCHSTORE, by flags, as Redis's georadiusGeneric: the arguments are read in its
// order, so that the first error is its. The source's and the store key's shards are
// locked together.
func (dt *Family) geoSearchHandler(flags int) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		srcIdx := 1
		keys := [][]byte{args[1]}
		switch {
		case flags&geoSearchStore != 0:
			srcIdx = 2
			keys = [][]byte{args[2], args[1]}
		case flags&(geoNoStore|geoSearch) == 0 && flags&geoCoords != 0:
			keys = geoStoreKeys(6)(args)
		case flags&(geoNoStore|geoSearch) == 0:
			keys = geoStoreKeys(5)(args)
		}
		var buf [2]*keyspace.Shard
		shards := c.Keys.LockKeys(keys, buf[:0])
		defer keyspace.UnlockShards(shards)
		return dt.geoSearch(c, args, srcIdx, flags)
	}
}

// geoSearch runs a search; the shards of its keys are locked.
func (dt *Family) geoSearch(c *command.Ctx, args [][]byte, srcIdx, flags int) error {
	src := args[srcIdx]
	v, exists, err := dt.zsetLocked(c, c.Keys.Shard(src), src)
	if err != nil {
		return err
	}
	if !c.Reading { // GEORADIUS, GEOSEARCHSTORE: Redis's lookupKeyRead all the same
		notifyMiss(c, src, exists)
	}
	q, err := geoParse(args, flags, v, exists)
	if err != nil {
		return err
	}
	if !exists && q.store == nil {
		c.W.Array(0)
		return nil
	}
	var pts []geoPoint
	if exists {
		pts = geoMatches(v, &q.shape, q.limit())
	}
	if q.count != 0 && q.sort == 0 && !q.any {
		q.sort = 1 // COUNT keeps the nearest
	}
	switch q.sort {
	case 1:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case 2:
		slices.SortStableFunc(pts, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	if q.count > 0 && int64(len(pts)) > q.count {
		pts = pts[:q.count]
	}
	if q.store != nil {
		dt.geoStore(c, q, pts, flags)
		return nil
	}
	opts := b2i(q.withDist) + b2i(q.withHash) + b2i(q.withCoord)
	c.W.Array(len(pts))
	for _, p := range pts {
		if opts > 0 {
			c.W.Array(int(opts) + 1)
		}
		c.W.Bulk(p.member)
		if q.withDist {
			geoDistance(c, p.dist/q.shape.Conversion)
		}
		if q.withHash {
			c.W.Int(int64(p.score))
		}
		if q.withCoord {
			c.W.Array(2)
			geoCoord(c, p.x)
			geoCoord(c, p.y)
		}
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// geoStore stores a search's matches at its STORE key: by geohash, or by distance
// (STOREDIST); an empty result deletes the key.
func (dt *Family) geoStore(c *command.Ctx, q geoQuery, pts []geoPoint, flags int) {
	sh := c.Keys.Shard(q.store) // locked by geoSearchHandler
	es := make([]zent, len(pts))
	for i, p := range pts {
		s := p.score
		if q.storeDist {
			s = p.dist / q.shape.Conversion
		}
		es[i] = zent{m: string(p.member), s: s}
	}
	zsort(es)
	event := "georadiusstore"
	if flags&geoSearch != 0 {
		event = "geosearchstore"
	}
	dt.zstoreEntriesLocked(c, sh, q.store, es, event)
	c.W.Int(int64(len(es)))
}

// geoQuery is a search's arguments, read.
type geoQuery struct {
	shape                         geo.Shape
	withDist, withHash, withCoord bool
	any                           bool
	sort                          int // 0 none, 1 ASC, 2 DESC
	count                         int64
	store                         []byte
	storeDist                     bool
}

// limit is how many matches the search may stop at: COUNT with ANY, else all.
func (q *geoQuery) limit() int64 {
	if q.any {
		return q.count
	}
	return 0
}

// geoParse reads a search's arguments in Redis's order; v is the source, when it exists.
func geoParse(args [][]byte, flags int, v keyspace.Value, exists bool) (geoQuery, error) {
	var q geoQuery
	var err error
	base := 0
	switch {
	case flags&geoCoords != 0:
		base = 6
		if q.shape.X, q.shape.Y, err = geoLongLat(args[2:4]); err != nil {
			return q, err
		}
		if q.shape.Radius, q.shape.Conversion, err = geoRadius(args[4:6]); err != nil {
			return q, err
		}
	case flags&geoMember != 0 && !exists:
		base = 5
	case flags&geoMember != 0:
		base = 5
		s, ok := zscore(v, args[2])
		if !ok {
			return q, errGeoMember
		}
		q.shape.X, q.shape.Y = geo.Decode(s)
		if q.shape.Radius, q.shape.Conversion, err = geoRadius(args[3:5]); err != nil {
			return q, err
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			q.store = args[1]
		}
	}
	var fromMember, fromLoc, byRadius, byBox bool
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		a, left := rest[i], len(rest)-i-1
		search := flags&geoSearch != 0
		switch {
		case command.EqualFold(a, "withdist"):
			q.withDist = true
		case command.EqualFold(a, "withhash"):
			q.withHash = true
		case command.EqualFold(a, "withcoord"):
			q.withCoord = true
		case command.EqualFold(a, "any"):
			q.any = true
		case command.EqualFold(a, "asc"):
			q.sort = 1
		case command.EqualFold(a, "desc"):
			q.sort = 2
		case command.EqualFold(a, "count") && left >= 1:
			n, ok := command.ParseInt(rest[i+1])
			if !ok {
				return q, command.ErrNotInteger
			}
			if n <= 0 {
				return q, errGeoCount
			}
			q.count = n
			i++
		case (command.EqualFold(a, "store") || command.EqualFold(a, "storedist")) && left >= 1 && flags&(geoNoStore|geoSearch) == 0:
			q.store, q.storeDist = rest[i+1], command.EqualFold(a, "storedist")
			i++
		case command.EqualFold(a, "storedist") && flags&geoSearchStore != 0:
			q.storeDist = true
		case command.EqualFold(a, "frommember") && left >= 1 && search && !fromLoc:
			if exists {
				s, ok := zscore(v, rest[i+1])
				if !ok {
					return q, errGeoMember
				}
				q.shape.X, q.shape.Y = geo.Decode(s)
			}
			fromMember = true
			i++
		case command.EqualFold(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if q.shape.X, q.shape.Y, err = geoLongLat(rest[i+1 : i+3]); err != nil {
				return q, err
			}
			fromLoc = true
			i += 2
		case command.EqualFold(a, "byradius") && left >= 2 && search && !byBox:
			if q.shape.Radius, q.shape.Conversion, err = geoRadius(rest[i+1 : i+3]); err != nil {
				return q, err
			}
			q.shape.Box = false
			byRadius = true
			i += 2
		case command.EqualFold(a, "bybox") && left >= 3 && search && !byRadius:
			if q.shape.Width, err = geoFloat(rest[i+1], "need numeric width"); err != nil {
				return q, err
			}
			if q.shape.Height, err = geoFloat(rest[i+2], "need numeric height"); err != nil {
				return q, err
			}
			if q.shape.Width < 0 || q.shape.Height < 0 {
				return q, errGeoBox
			}
			if q.shape.Conversion, err = geoUnit(rest[i+3]); err != nil {
				return q, err
			}
			q.shape.Box = true
			byBox = true
			i += 3
		default:
			return q, command.ErrSyntax
		}
	}
	name := string(args[0])
	switch {
	case q.store != nil && (q.withDist || q.withHash || q.withCoord):
		if flags&geoSearchStore != 0 {
			return q, errors.New("GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		}
		return q, errors.New("STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	case flags&geoSearch != 0 && !fromMember && !fromLoc:
		return q, fmt.Errorf("exactly one of FROMMEMBER or FROMLONLAT can be specified for %s", name)
	case flags&geoSearch != 0 && !byRadius && !byBox:
		return q, fmt.Errorf("exactly one of BYRADIUS and BYBOX can be specified for %s", name)
	case q.any && q.count == 0:
		return q, errGeoAny
	}
	return q, nil
}

// geoRadius reads a radius and its unit.
func geoRadius(args [][]byte) (radius, conversion float64, err error) {
	if radius, err = geoFloat(args[0], "need numeric radius"); err != nil {
		return 0, 0, err
	}
	if radius < 0 {
		return 0, 0, errGeoRadius
	}
	conversion, err = geoUnit(args[1])
	return radius, conversion, err
}

// geoMatches returns the members of v, a sorted set, within shape, box by box as Redis
// reads them, stopping at limit matches unless limit is 0.
func geoMatches(v keyspace.Value, shape *geo.Shape, limit int64) []geoPoint {
	z := zsetOf(v).Pack
	var out []geoPoint
	var buf [24]byte
	for _, box := range geo.Boxes(shape) {
		if limit > 0 && int64(len(out)) >= limit {
			break
		}
		from, to, n, _ := collection.ZScoreSpan(z, collection.ScoreRange{Min: box[0], Max: box[1], MaxEx: true})
		for off := from; n > 0 && off < to; {
			m, s, k := collection.ZNext(z[off:])
			if k == 0 {
				break
			}
			off += k
			if x, y, d, ok := geo.Within(shape, s); ok {
				out = append(out, geoPoint{member: append([]byte(nil), m.Bytes(buf[:0])...), x: x, y: y, dist: d, score: s})
			}
			if limit > 0 && int64(len(out)) >= limit {
				break
			}
		}
	}
	return out
}
