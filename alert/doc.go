// Package alert delivers alerts: one JSON document to every alert channel a
// target declares (a webhook posted with small explicit retry bounds, or a
// command given the document on stdin), in order, never stopping at a
// failing channel, and says what each channel answered. A webhook URL may
// carry a token, so no spelling of it reaches an outcome, and nothing a
// webhook answers but its status code is kept. A command channel runs a
// registry-declared argv, so it runs only where the caller says it is the
// host process of the declaring host (OnOwningHost); anywhere else it is an
// outcome not run.
//
// alert imports register (an alert about a recovery carries the register's
// record, and each channel's answer is a register.AlertOutcome), registry
// (the declared alert channels), units (the fixed PATH a command channel
// runs with and the tail of its output) and go-retryablehttp. It must not
// import repair, channel, fleet or cli: repair and autonomy both alert, and
// neither should have to link the other to do so.
package alert
