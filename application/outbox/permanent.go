package outbox

import "errors"

// ErrPermanent marks a publish failure no retry can fix — the broker refused
// the message itself (too large, malformed), not the moment (throttling, an
// outage). A Publisher wraps it, fmt.Errorf("%w: %w", outbox.ErrPermanent,
// err), and the relay, matching it with errors.Is, makes the row DEAD at once
// instead of retrying it MaxAttempts times over the backoff; an operator fixes
// the cause and requeues it. Publishers wrap only what they know to be
// permanent: when in doubt, retry. It is the outbox's side of one idiom: the
// inbox's refusal for good is inbox.ErrPermanent, a sentinel too.
var ErrPermanent = errors.New("refused for good")
