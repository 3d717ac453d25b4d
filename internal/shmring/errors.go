package shmring

// errorString is an error that is a constant.
type errorString string

func (e errorString) Error() string { return string(e) }
