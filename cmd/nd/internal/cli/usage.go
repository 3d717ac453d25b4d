package cli

import (
	"context"
	"fmt"
)

// RunFunc runs a parsed command. ctx ends on Ctrl-C or when the command's
// timeout expires; positional are the arguments left after the flags.
type RunFunc func(ctx context.Context, positional []string) error

// UsageError is an error in the command line that flag parsing could not
// catch, such as a bad positional argument; nd prints the usage after it.
type UsageError struct{ msg string }

// Error returns the message.
func (e UsageError) Error() string { return e.msg }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Sprintf(format, args...)}
}
