package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialGeo(t *testing.T) { difftest.Run(t, difftest.Geo, throttled) }
