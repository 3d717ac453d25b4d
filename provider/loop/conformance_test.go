package loop_test

import (
	"testing"

	"github.com/godirect/nd/ndtest"
	"github.com/godirect/nd/provider/loop"
)

func TestConformance(t *testing.T) { ndtest.Run(t, loop.New()) }
