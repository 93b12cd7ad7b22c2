package difftest

import (
	"math/rand/v2"
	"strconv"
)

// The geospatial commands against redis-server: points around Sicily (a few kilometres to
// a few hundred apart) and now and then anywhere, near the poles and the antimeridian, so
// that searches meet every box of the grid; radiuses from 0 to thousands of kilometres;
// bad coordinates, units, counts and option mixes for the errors. Replies are compared
// byte for byte, their order included: throttled walks the boxes and sorts as Redis does.

var geoMembers = []string{"Palermo", "Catania", "Agrigento", "Messina", "Trapani", "a", "b", "c", "1", "-2"}

// geoMember returns one of the members, now and then one no key holds.
func geoMember(r *rand.Rand) string {
	if r.IntN(15) == 0 {
		return "nosuch"
	}
	return geoMembers[r.IntN(len(geoMembers))]
}

// geoLonLat returns a longitude and a latitude, now and then bad ones.
func geoLonLat(r *rand.Rand) []string {
	f := func(lo, hi float64) string { return strconv.FormatFloat(lo+r.Float64()*(hi-lo), 'f', 1+r.IntN(7), 64) }
	switch r.IntN(20) {
	case 0:
		return []string{Pick(r, "abc", "181", "-180.0001", "nan", ""), "38"}
	case 1:
		return []string{"13", Pick(r, "85.06", "-85.1", "x", "90")}
	case 2:
		return []string{Pick(r, "180", "-180", "179.9999", "0"), Pick(r, "85.05112878", "-85.05112878", "0", "84.9")}
	case 3, 4:
		return []string{f(-180, 180), f(-85, 85)}
	}
	return []string{f(12, 16), f(36.5, 38.5)}
}

// geoRadius returns a radius and a unit, now and then bad ones.
func geoRadius(r *rand.Rand) []string {
	if r.IntN(20) == 0 {
		return []string{Pick(r, "-1", "abc", "10"), Pick(r, "km", "yd", "M")}
	}
	return []string{Pick(r, "0", "1", "10", "50", "100", "200", "500", "3000", "10000", "0.5"), Pick(r, "km", "m", "mi", "ft", "KM")}
}

// geoOptions returns the reply options of a search, in any order, now and then a bad one.
func geoOptions(r *rand.Rand, sorted *bool) []string {
	var o []string
	for range r.IntN(4) {
		switch r.IntN(9) {
		case 0, 1, 2:
			o = append(o, Pick(r, "WITHDIST", "WITHCOORD", "WITHHASH", "withdist"))
		case 3:
			o = append(o, Pick(r, "ASC", "DESC"))
			*sorted = true
		case 4, 5:
			o = append(o, "COUNT", Pick(r, "1", "2", "3", "10", "0", "-1", "x"))
		case 6:
			o = append(o, "COUNT", Pick(r, "1", "2", "5"), "ANY")
		case 7:
			o = append(o, Pick(r, "ANY", "nosuch"))
		}
	}
	return o
}

// Geo draws a geospatial command, or a sorted set or string command on the same keys.
func Geo(r *rand.Rand) Cmd {
	k := Key(r)
	var sorted bool
	switch r.IntN(16) {
	case 0, 1, 2, 3:
		args := []string{"GEOADD", k}
		if r.IntN(6) == 0 {
			args = append(args, Pick(r, "NX", "XX", "CH", "GT"))
		}
		for range 1 + r.IntN(3) {
			args = append(args, geoLonLat(r)...)
			args = append(args, geoMember(r))
		}
		if r.IntN(30) == 0 {
			args = args[:len(args)-1]
		}
		return Cmd{Args: args}
	case 4:
		args := []string{"GEODIST", k, geoMember(r), geoMember(r)}
		if r.IntN(2) == 0 {
			args = append(args, Pick(r, "m", "km", "mi", "ft", "yd", "KM"))
		}
		if r.IntN(15) == 0 {
			args = append(args, "extra")
		}
		return Cmd{Args: args}
	case 5:
		return Cmd{Args: []string{Pick(r, "GEOHASH", "GEOPOS"), k, geoMember(r), geoMember(r)}}
	case 6, 7:
		args := append(append([]string{Pick(r, "GEORADIUS", "GEORADIUS_RO"), k}, geoLonLat(r)...), geoRadius(r)...)
		args = append(args, geoOptions(r, &sorted)...)
		if args[0] == "GEORADIUS" && r.IntN(4) == 0 {
			args = append(args, Pick(r, "STORE", "STOREDIST"), Key(r))
		}
		return Cmd{Args: args}
	case 8, 9:
		args := append([]string{Pick(r, "GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"), k, geoMember(r)}, geoRadius(r)...)
		args = append(args, geoOptions(r, &sorted)...)
		if args[0] == "GEORADIUSBYMEMBER" && r.IntN(4) == 0 {
			args = append(args, Pick(r, "STORE", "STOREDIST"), Key(r))
		}
		return Cmd{Args: args}
	case 10, 11, 12:
		store := r.IntN(3) == 0
		args := []string{"GEOSEARCH", k}
		if store {
			args = []string{"GEOSEARCHSTORE", Key(r), k}
		}
		var from, by []string
		if r.IntN(2) == 0 {
			from = []string{"FROMMEMBER", geoMember(r)}
		} else {
			from = append([]string{"FROMLONLAT"}, geoLonLat(r)...)
		}
		if r.IntN(2) == 0 {
			by = append([]string{"BYRADIUS"}, geoRadius(r)...)
		} else {
			by = []string{"BYBOX", Pick(r, "10", "100", "400", "0", "-3", "w"), Pick(r, "10", "50", "300", "h"), Pick(r, "km", "mi", "m", "yd")}
		}
		switch r.IntN(12) {
		case 0:
			from = nil
		case 1:
			by = nil
		case 2:
			from = append(from, "FROMMEMBER", "a")
		}
		if r.IntN(2) == 0 {
			from, by = by, from
		}
		args = append(append(args, from...), by...)
		args = append(args, geoOptions(r, &sorted)...)
		if store && r.IntN(2) == 0 {
			args = append(args, "STOREDIST")
		}
		return Cmd{Args: args}
	case 13:
		return Cmd{Args: []string{"ZADD", k, Pick(r, "0", "-5", "1e20", "3471579339700058"), geoMember(r)}}
	case 14:
		return Cmd{Args: []string{"ZREM", k, geoMember(r)}}
	}
	if r.IntN(4) == 0 {
		return Cmd{Args: []string{"SET", k, "v"}}
	}
	return Cmd{Args: []string{"DEL", k}}
}
