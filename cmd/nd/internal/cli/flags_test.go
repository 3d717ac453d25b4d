package cli

import (
	"testing"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "4096": 4096, "64K": 64 << 10, "4MiB": 4 << 20, "2 mb": 2 << 20, "1G": 1 << 30} {
		var b ByteSize
		if err := b.Set(in); err != nil || int(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "4X", "K", "1.5M"} {
		var b ByteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, b)
		}
	}
	b := ByteSize(4 << 20)
	if got := b.String(); got != "4MiB" {
		t.Errorf("String() = %q, want 4MiB", got)
	}
}

// TestAtoi checks CInt's reading against glibc's atoi on amd64 (the values
// are what atoi returned there for each string).
func TestAtoi(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int32
	}{
		{"64", 64}, {"0100", 100}, {"0x40", 0}, {"64abc", 64}, {" 64", 64},
		{"\t\n 64", 64}, {"+64", 64}, {"-64", -64}, {"- 64", 0}, {"", 0},
		{"abc", 0}, {"1_000", 1}, {"23", 23}, {"22", 22}, {"65535", 65535},
		{"4294967360", 64}, {"2147483648", -2147483648}, {"-2147483649", 2147483647},
		{"9223372036854775807", -1}, {"9223372036854775808", -1},
		{"99999999999999999999", -1}, {"18446744073709551639", -1},
		{"-9223372036854775808", 0}, {"-9223372036854775809", 0},
		{"-99999999999999999999", 0},
	} {
		if got := Atoi(tt.s); got != tt.want {
			t.Errorf("atoi(%q) = %d, want %d", tt.s, got, tt.want)
		}
		var c CInt
		if err := c.Set(tt.s); err != nil || int32(c) != tt.want {
			t.Errorf("cInt.Set(%q): %d, %v; want %d", tt.s, c, err, tt.want)
		}
	}
}
