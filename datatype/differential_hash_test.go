package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialHash(t *testing.T) { difftest.Run(t, difftest.Hash, throttled) }
