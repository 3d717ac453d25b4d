package main

// Flag value types shared by the commands.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag.Value for a number of bytes: a plain number, or one
// with a binary suffix K, M or G (also KiB, MiB, GiB, and KB, MB, GB, all
// meaning powers of 1024).
type byteSize int

// String implements flag.Value.
func (b *byteSize) String() string {
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
func (b *byteSize) Set(s string) error {
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
	*b = byteSize(v << shift)
	return nil
}
