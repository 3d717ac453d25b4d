package rping

import (
	"fmt"
	"testing"
)

// TestFillPing checks the ping data against rping's pattern.
func TestFillPing(t *testing.T) {
	buf := make([]byte, 30)
	FillPing(buf, 0, StartLetter(0))
	if got, want := string(buf), "rdma-ping-0: ABCDEFGHIJKLMNOP\x00"; got != want {
		t.Errorf("ping 0 = %q, want %q", got, want)
	}
	FillPing(buf, 57, StartLetter(57))
	if got, want := string(buf), "rdma-ping-57: zABCDEFGHIJKLMN\x00"; got != want {
		t.Errorf("ping 57 = %q, want %q", got, want)
	}
	FillPing(buf, 58, StartLetter(58))
	if got := fmt.Sprintf("%c", buf[14]); got != "A" {
		t.Errorf("ping 58 starts with %q, want A (the letters wrap)", got)
	}
	// rping's smallest buffer, 23 bytes: its ping counter (a C int) wraps
	// to -2147483648 after 2147483647, whose prefix snprintf cuts to 22
	// characters and the terminating 0; there is no room for letters.
	small := make([]byte, rpingMinSize)
	FillPing(small, 1<<31, StartLetter(1<<31))
	if got, want := string(small), "rdma-ping--2147483648:\x00"; got != want {
		t.Errorf("ping 1<<31 in 23 bytes = %q, want %q", got, want)
	}
	FillPing(small, 1<<31-1, StartLetter(1<<31-1))
	if got, want := string(small), "rdma-ping-2147483647: \x00"; got != want {
		t.Errorf("ping 1<<31-1 in 23 bytes = %q, want %q", got, want)
	}
}
