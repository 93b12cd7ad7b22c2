package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialList(t *testing.T) { difftest.Run(t, difftest.List, throttled) }
