package store

import "errors"

// unavailableError is the store's backend failing to answer: Redis
// unreachable, or a connection lost mid-command.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// NewUnavailableError is err, which says the backend could not be reached,
// prefixed with msg and marked for Unavailable. Backends wrap their
// connection failures with it.
func NewUnavailableError(msg string, err error) error {
	return &unavailableError{msg: msg, err: err}
}

// Unavailable reports whether err is the store being unreachable (as opposed
// to an answer: a lost lease, bad input, a missing record). Such a failure is
// nobody's fault: whoever met it waits and tries again.
func Unavailable(err error) bool {
	var u *unavailableError
	return errors.As(err, &u)
}
