// Package geo is the arithmetic of Redis's geospatial commands, giving the scores, hashes
// and distances Redis's geohash.c, geohash_helper.c and geo.c give: pure functions, no
// keys, no I/O.
//
// A point is stored as a sorted set member whose score is its 52-bit geohash: the longitude
// and latitude, each scaled to 26 bits over [-180, 180] and [-85.05112878, 85.05112878]
// (the range of Web Mercator, EPSG:3785), interleaved bit by bit with the latitude's bits at
// the even positions. A score is exact as a float64: 52 bits fit its mantissa.
//
// A search (GEORADIUS, GEOSEARCH) turns its shape into nine boxes of the grid at one
// precision (Areas: the box holding the centre and its eight neighbours, the useless ones
// zeroed), each box a range of scores [Box.Scores), and keeps the members of those ranges
// that lie within the shape (Within), with their distance from the centre.
package geo

import (
	"math"
)

// The limits of what can be indexed: Web Mercator does not reach the poles.
const (
	LongMin = -180.0
	LongMax = 180.0
	LatMin  = -85.05112878
	LatMax  = 85.05112878
)

// StepMax is the precision of a stored score: 26 bits a coordinate, 52 in all.
const StepMax = 26

// earthRadius is the Earth's quadratic mean radius for WGS-84, in metres, as Redis uses.
const earthRadius = 6372797.560856

// mercatorMax is the half-circumference Redis's step estimate starts from.
const mercatorMax = 20037726.37

// Hash is a geohash of Step bits a coordinate.
type Hash struct {
	Bits uint64
	Step uint8
}

// zero reports whether h is a neighbour Areas left out.
func (h Hash) zero() bool { return h.Bits == 0 && h.Step == 0 }

// rng is a coordinate's range.
type rng struct{ min, max float64 }

// Area is the rectangle a hash stands for.
type Area struct {
	Hash      Hash
	Long, Lat rng
}

var (
	mercatorLong = rng{LongMin, LongMax}
	mercatorLat  = rng{LatMin, LatMax}
)

// interleave spreads x over the even bits and y over the odd ones.
func interleave(x, y uint32) uint64 {
	return spread(x) | spread(y)<<1
}

func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

func squash(x uint64) uint32 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// encode is geohashEncode over the ranges long and lat; false outside them.
func encode(long, lat rng, x, y float64, step uint8) (Hash, bool) {
	if x > LongMax || x < LongMin || y > LatMax || y < LatMin ||
		y < lat.min || y > lat.max || x < long.min || x > long.max {
		return Hash{}, false
	}
	latOff := (y - lat.min) / (lat.max - lat.min)
	longOff := (x - long.min) / (long.max - long.min)
	latOff *= float64(uint64(1) << step)
	longOff *= float64(uint64(1) << step)
	return Hash{Bits: interleave(uint32(latOff), uint32(longOff)), Step: step}, true
}

// Encode returns the hash of longitude x, latitude y at step bits a coordinate; false when
// the point cannot be indexed.
func Encode(x, y float64, step uint8) (Hash, bool) {
	return encode(mercatorLong, mercatorLat, x, y, step)
}

// decode is geohashDecode over the ranges long and lat.
func decode(long, lat rng, h Hash) Area {
	ilat := squash(h.Bits)
	ilong := squash(h.Bits >> 1)
	div := float64(uint64(1) << h.Step)
	return Area{Hash: h,
		Lat:  rng{lat.min + float64(ilat)/div*(lat.max-lat.min), lat.min + float64(ilat+1)/div*(lat.max-lat.min)},
		Long: rng{long.min + float64(ilong)/div*(long.max-long.min), long.min + float64(ilong+1)/div*(long.max-long.min)},
	}
}

// Decode returns the centre of a stored score's box, as longitude and latitude.
func Decode(score float64) (x, y float64) {
	h := Hash{Bits: scoreBits(score), Step: StepMax}
	a := decode(mercatorLong, mercatorLat, h)
	x = min(max((a.Long.min+a.Long.max)/2, LongMin), LongMax)
	y = min(max((a.Lat.min+a.Lat.max)/2, LatMin), LatMax)
	return x, y
}

// scoreBits is C's (uint64_t)score as Redis's x86-64 build computes it, for the scores a
// sorted set may hold that no GEOADD stored (negative, 2^64 and more): below 2^63 through
// a signed conversion, from there minus 2^63, the out-of-range result being 1<<63.
func scoreBits(f float64) uint64 {
	const two63 = 1 << 63
	signed := func(f float64) uint64 {
		if f >= -two63 && f < two63 {
			return uint64(int64(f))
		}
		return 1 << 63 // cvttsd2si's integer indefinite
	}
	if f < two63 {
		return signed(f)
	}
	return signed(f-two63) ^ 1<<63
}

// Score is the stored score of longitude x, latitude y (GEOADD's).
func Score(x, y float64) float64 {
	h, _ := Encode(x, y, StepMax)
	return float64(align52(h))
}

// align52 shifts h to 52 bits.
func align52(h Hash) uint64 { return h.Bits << (52 - uint(h.Step)*2) }

// Scores is the range [min, max) of the stored scores inside h's box.
func (h Hash) Scores() (lo, hi float64) {
	lo = float64(align52(h))
	h.Bits++
	return lo, float64(align52(h))
}

// String11 is GEOHASH's reply for a stored score: the standard 11-character geohash, over
// latitudes [-90, 90], the last character always '0' (52 bits are stored, not 55).
func String11(score float64) string {
	x, y := Decode(score)
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	h, _ := encode(rng{-180, 180}, rng{-90, 90}, x, y, StepMax)
	var buf [11]byte
	for i := range 10 {
		buf[i] = alphabet[(h.Bits>>(52-(uint(i)+1)*5))&0x1f]
	}
	buf[10] = alphabet[0]
	return string(buf[:])
}

// Longitude's bits are the odd ones of a hash, latitude's the even ones.
const (
	longBits = 0xaaaaaaaaaaaaaaaa
	latBits  = 0x5555555555555555
)

// move moves h one box along the coordinate whose bits are mine (longBits or latBits):
// east or north for d > 0, west or south for d < 0. The coordinate's bits are added to (or
// taken from) as one number: the other coordinate's bits between them are set to ones
// first, so that a carry (a borrow) crosses them.
func (h *Hash) move(d int, mine uint64) {
	if d == 0 {
		return
	}
	width := 64 - uint(h.Step)*2
	gaps := ^mine >> width
	v := h.Bits & mine
	if d > 0 {
		v += gaps + 1
	} else {
		v = (v | gaps) - (gaps + 1)
	}
	h.Bits = v&(mine>>width) | h.Bits&^mine
}

func (h Hash) moved(dx, dy int) Hash {
	h.move(dx, longBits)
	h.move(dy, latBits)
	return h
}

// Shape is what a search keeps: a circle of Radius or a Width by Height box around the
// centre X (longitude), Y (latitude), in units of Conversion metres.
type Shape struct {
	X, Y          float64
	Box           bool
	Radius        float64
	Width, Height float64
	Conversion    float64
}

// bounds is geohashBoundingBox: min longitude, min latitude, max longitude, max latitude.
func (s *Shape) bounds() [4]float64 {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*s.Height/2, s.Conversion*s.Width/2
	}
	latDelta := radDeg(height / earthRadius)
	longDeltaTop := radDeg(width / earthRadius / math.Cos(degRad(s.Y+latDelta)))
	longDeltaBottom := radDeg(width / earthRadius / math.Cos(degRad(s.Y-latDelta)))
	var b [4]float64
	if s.Y < 0 { // the southern hemisphere: the box is widest at its top
		b[0], b[2] = s.X-longDeltaBottom, s.X+longDeltaBottom
	} else {
		b[0], b[2] = s.X-longDeltaTop, s.X+longDeltaTop
	}
	b[1], b[3] = s.Y-latDelta, s.Y+latDelta
	return b
}

const dR = math.Pi / 180.0

func degRad(a float64) float64 { return a * dR }
func radDeg(a float64) float64 { return a / dR }

// estimateSteps is geohashEstimateStepsByRadius.
func estimateSteps(meters, lat float64) uint8 {
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2 // the range is then inside the boxes in most cases
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// Areas returns the boxes a search of s reads, in Redis's order: the centre's, then north,
// south, east, west, north-east, north-west, south-east, south-west; a box left out is
// zero (skip it).
func Areas(s *Shape) [9]Hash {
	b := s.bounds()
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(s.Width/2*s.Width/2 + s.Height/2*s.Height/2)
	}
	steps := estimateSteps(radius*s.Conversion, s.Y)
	hash, _ := encode(mercatorLong, mercatorLat, s.X, s.Y, steps)
	n := neighbours(hash)
	area := decode(mercatorLong, mercatorLat, hash)
	// Is the step enough at the edges of the area covered?
	north := decode(mercatorLong, mercatorLat, n[1])
	south := decode(mercatorLong, mercatorLat, n[2])
	east := decode(mercatorLong, mercatorLat, n[3])
	west := decode(mercatorLong, mercatorLat, n[4])
	if steps > 1 && (north.Lat.max < b[3] || south.Lat.min > b[1] || east.Long.max < b[2] || west.Long.min > b[0]) {
		steps--
		hash, _ = encode(mercatorLong, mercatorLat, s.X, s.Y, steps)
		n = neighbours(hash)
		area = decode(mercatorLong, mercatorLat, hash)
	}
	if steps >= 2 { // leave out the boxes that cannot hold a match
		if area.Lat.min < b[1] {
			n[2], n[8], n[7] = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.max > b[3] {
			n[1], n[5], n[6] = Hash{}, Hash{}, Hash{}
		}
		if area.Long.min < b[0] {
			n[4], n[8], n[6] = Hash{}, Hash{}, Hash{}
		}
		if area.Long.max > b[2] {
			n[3], n[7], n[5] = Hash{}, Hash{}, Hash{}
		}
	}
	return n
}

// neighbours returns h and its eight neighbours in Areas' order.
func neighbours(h Hash) [9]Hash {
	return [9]Hash{h, h.moved(0, 1), h.moved(0, -1), h.moved(1, 0), h.moved(-1, 0),
		h.moved(1, 1), h.moved(-1, 1), h.moved(1, -1), h.moved(-1, -1)}
}

// Boxes returns the score ranges of the boxes Areas gives, skipping those left out and
// those the same as the box before them (a radius of thousands of kilometres makes
// neighbours meet), as Redis's membersOfAllNeighbors.
func Boxes(s *Shape) [][2]float64 {
	n := Areas(s)
	var out [][2]float64
	last := -1
	for i, h := range n {
		if h.zero() {
			continue
		}
		if last > 0 && h == n[last] {
			continue
		}
		lo, hi := h.Scores()
		out = append(out, [2]float64{lo, hi})
		last = i
	}
	return out
}

// latDistance is the distance in metres between two latitudes.
func latDistance(lat1, lat2 float64) float64 {
	return earthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine distance in metres between two points given as longitude and
// latitude, as Redis computes it.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 { // the same longitude: the cheaper formula
		return latDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * earthRadius * math.Asin(math.Sqrt(a))
}

// Within decodes score and reports whether its point lies in s, with the point and its
// distance from the centre in metres.
func Within(s *Shape, score float64) (x, y, dist float64, ok bool) {
	x, y = Decode(score)
	if !s.Box {
		dist = Distance(s.X, s.Y, x, y)
		return x, y, dist, dist <= s.Radius*s.Conversion
	}
	if latDistance(s.Y, y) > s.Height*s.Conversion/2 {
		return x, y, 0, false
	}
	if Distance(x, y, s.X, y) > s.Width*s.Conversion/2 { // along the point's parallel
		return x, y, 0, false
	}
	return x, y, Distance(s.X, s.Y, x, y), true
}
