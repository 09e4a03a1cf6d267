package outbox

import "errors"

// Permanent marks err as a publish failure no retry can fix — the broker refused
// the message itself (too large, malformed), not the moment (throttling, an
// outage). The relay makes such a row DEAD at once instead of retrying it
// MaxAttempts times over the backoff; an operator fixes the cause and requeues it.
// Publishers wrap only what they know to be permanent: when in doubt, retry.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }
