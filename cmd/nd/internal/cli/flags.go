package cli

// Flag value types shared by the commands.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a flag.Value for a number of bytes: a plain number, or one
// with a binary suffix K, M or G (also KiB, MiB, GiB, and KB, MB, GB, all
// meaning powers of 1024).
type ByteSize int

// String implements flag.Value.
func (b *ByteSize) String() string {
	switch v := int(*b); {
	case v >= 1<<30 && v%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", v>>30)
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", v>>10)
	default:
		return strconv.Itoa(v)
	}
}

// Set implements flag.Value.
func (b *ByteSize) Set(s string) error {
	num := strings.TrimSpace(s)
	shift := 0
	upper := strings.ToUpper(num)
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"KIB", 10}, {"MIB", 20}, {"GIB", 30}, {"KB", 10}, {"MB", 20}, {"GB", 30}, {"K", 10}, {"M", 20}, {"G", 30}} {
		if strings.HasSuffix(upper, u.suffix) {
			num, shift = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.shift
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 63)
	if err != nil || v > uint64(math.MaxInt)>>shift {
		return fmt.Errorf("%q is not a byte count (such as 4096, 64K or 4MiB)", s)
	}
	*b = ByteSize(v << shift)
	return nil
}

// CInt is a flag.Value for an int read as C's atoi reads it on the LP64
// hosts rdma-core's tools run on, for flags that must mean what the C
// tool's mean: leading white space, an optional sign, then decimal digits
// up to the first other character (none: 0); strtol's value, held at the
// range of a 64-bit long, is then cut to 32 bits. "0100" is 100, "0x40" is
// 0, "64abc" is 64 and "4294967360" is 64, as in rping.
type CInt int

// String implements flag.Value.
func (c *CInt) String() string { return strconv.Itoa(int(*c)) }

// Set implements flag.Value; every string is a number to atoi.
func (c *CInt) Set(s string) error {
	*c = CInt(Atoi(s))
	return nil
}

// Atoi is glibc's atoi on LP64: (int)strtol(s, NULL, 10).
func Atoi(s string) int32 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v uint64 // the magnitude, held at 1<<63 (LONG_MIN's)
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if v > (1<<63)/10 {
			v = 1 << 63
		} else {
			v = min(v*10+uint64(s[i]-'0'), 1<<63)
		}
	}
	var l int64
	switch {
	case neg:
		l = int64(-v) // 1<<63 becomes math.MinInt64, as strtol's LONG_MIN
	case v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int32(l)
}
