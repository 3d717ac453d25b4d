//go:build !shmportable

package shmring

import "testing"

func TestNotEventfd(t *testing.T) {
	if IsEventfd(0) {
		t.Fatal("stdin is an eventfd?")
	}
}
