//go:build !linux

package tcp

// perLink: without a readiness set of the kernel's here, each link's
// reader goroutine moves its own inbound bytes, reading blocking; the
// application's polls only take completions.
const perLink = true

// yieldProcessor: the pollers that would call it do not run here.
func yieldProcessor() {}

// readySet is empty where perLink holds: nothing calls it.
type readySet struct{}

func (*readySet) open() error                                       { return nil }
func (*readySet) close()                                            {}
func (*readySet) add(*link, int32) error                            { return nil }
func (*readySet) remove(*link)                                      {}
func (*readySet) quiet(*link)                                       {}
func (*readySet) interrupt()                                        {}
func (*readySet) wait(out []readyEvent, _ int, _ bool) []readyEvent { return out[:0] }
