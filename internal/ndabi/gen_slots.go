//go:build ignore

// gen_slots writes slots.go: a constant for each slot of each interface of
// Interfaces past the IUnknown and overlapped ones, named interface+method.
package main

import (
	"log"
	"os"

	"github.com/godirect/nd/internal/ndabi"
)

func main() {
	if err := os.WriteFile("slots.go", ndabi.SlotsSource(), 0o644); err != nil {
		log.Fatal(err)
	}
}
