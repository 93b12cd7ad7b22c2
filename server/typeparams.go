package server

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/throttledhq/throttled/conffile"
	"github.com/throttledhq/throttled/datatype"
)

// initLimits sets the data types' encoding thresholds from cfg.
func initLimits(l *datatype.Limits, cfg Config) {
	l.HashEntries.Store(int64(cfg.HashMaxListpackEntries))
	l.HashValue.Store(int64(cfg.HashMaxListpackValue))
	l.ZsetEntries.Store(int64(cfg.ZsetMaxListpackEntries))
	l.ZsetValue.Store(int64(cfg.ZsetMaxListpackValue))
	l.ListSize.Store(int64(cfg.ListMaxListpackSize))
	l.ListCompress.Store(int64(cfg.ListCompressDepth))
	l.SetIntset.Store(int64(cfg.SetMaxIntsetEntries))
	l.SetEntries.Store(int64(cfg.SetMaxListpackEntries))
	l.SetValue.Store(int64(cfg.SetMaxListpackValue))
}

// collectionParams are the data types' configuration parameters, under Redis 7's names with
// the ziplist names of Redis 6 as aliases.
func (s *Server) collectionParams() []*param {
	def := DefaultConfig()
	l := &s.listpack
	p := func(name, alias string, n *atomic.Int64, d int) *param {
		var aliases []string
		if alias != "" {
			aliases = []string{alias}
		}
		return &param{name: name, aliases: aliases, def: strconv.Itoa(d), file: plainValue,
			get: func() string { return itoa(n.Load()) },
			set: func(v string) (func(), error) {
				if name == "list-compress-depth" {
					x, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						return nil, errors.New("argument couldn't be parsed into an integer")
					}
					if x < 0 || x > math.MaxInt32 {
						return nil, errors.New("argument must be between 0 and 2147483647 inclusive")
					}
					return func() { n.Store(x) }, nil
				}
				if name == "list-max-listpack-size" {
					x, err := strconv.ParseInt(v, 10, 32)
					if err != nil {
						return nil, errors.New("argument couldn't be parsed into an integer")
					}
					return func() { n.Store(x) }, nil
				}
				x, err := conffile.ParseSize(v) // a memory value, as Redis takes these
				if err != nil || x < 0 {
					return nil, errors.New("argument must be a memory value")
				}
				return func() { n.Store(x) }, nil
			}}
	}
	return []*param{
		p("hash-max-listpack-entries", "hash-max-ziplist-entries", &l.HashEntries, def.HashMaxListpackEntries),
		p("hash-max-listpack-value", "hash-max-ziplist-value", &l.HashValue, def.HashMaxListpackValue),
		p("zset-max-listpack-entries", "zset-max-ziplist-entries", &l.ZsetEntries, def.ZsetMaxListpackEntries),
		p("zset-max-listpack-value", "zset-max-ziplist-value", &l.ZsetValue, def.ZsetMaxListpackValue),
		p("list-max-listpack-size", "list-max-ziplist-size", &l.ListSize, def.ListMaxListpackSize),
		p("list-compress-depth", "", &l.ListCompress, def.ListCompressDepth),
		p("set-max-intset-entries", "", &l.SetIntset, def.SetMaxIntsetEntries),
		p("set-max-listpack-entries", "", &l.SetEntries, def.SetMaxListpackEntries),
		p("set-max-listpack-value", "", &l.SetValue, def.SetMaxListpackValue),
	}
}
