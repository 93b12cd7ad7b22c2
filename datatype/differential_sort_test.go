package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialSort(t *testing.T) { difftest.Run(t, difftest.Sort, throttled) }
