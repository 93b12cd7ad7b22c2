package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialSet(t *testing.T) { difftest.Run(t, difftest.Set, throttled) }
