package fleet

import (
	"context"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/units"
)

// Bounds and defaults of a serving wait.
const (
	DefaultServingTimeout = 30 * time.Second
	MaxServingTimeout     = 30 * time.Minute
	DefaultServingPoll    = 250 * time.Millisecond
	// DefaultServingSettle is how long the unit must keep listening on the
	// same other port(s), and not on its own, before the wait refuses it
	// as settled elsewhere.
	DefaultServingSettle = 2 * time.Second
)

// ServingOptions say which declared service to wait for, where, how long.
type ServingOptions struct {
	Name    string
	Host    string
	Timeout time.Duration // <= 0: DefaultServingTimeout
	Poll    time.Duration // <= 0: DefaultServingPoll
	Settle  time.Duration // <= 0: DefaultServingSettle
}

// ServingResult is what a serving read found: the unit's process tree
// listening on the directory port at the declared address (Serving), or
// the evidence of why not.
type ServingResult struct {
	Host    string `json:"host"`
	Service string `json:"service"`
	Unit    string `json:"unit"`
	Serving bool   `json:"serving"`
	// Port and Address are the directory's; Listen is the socket found
	// ("127.0.1.2:8080"), PID and Program its owner.
	Port    int    `json:"port"`
	Address string `json:"address"`
	Listen  string `json:"listen,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	// Verdict is the unit's last reading.
	Verdict units.Verdict `json:"verdict"`
	// ExitCode and StderrLine are the last run's exit and the last line the
	// program wrote, when its process exited.
	ExitCode   *int   `json:"exit_code,omitempty"`
	StderrLine string `json:"stderr_line,omitempty"`
	// OtherPorts are the ports the unit listens on instead.
	OtherPorts []channel.UnitSocket `json:"other_ports,omitempty"`
	// Reads is how many verify calls the wait made; ElapsedMS how long it took.
	Reads     int   `json:"reads"`
	ElapsedMS int64 `json:"elapsed_ms"`
	// Refusal is set when the wait refused; the error returned is the same.
	Refusal *channel.UnitRefusal `json:"refusal,omitempty"`
}

// WaitServing waits until the declared unit of o.Name on o.Host owns its
// directory port on its declared address, reading the host with one verify
// call per poll. It refuses (a *refusal.Error, with the result as its
// evidence) when the unit's process exits (the last exit code and stderr
// line), when the unit settles on another port (naming it), and at the
// timeout. A service without a directory entry on the host is refused
// before any host is asked.
func (f *Fleet) WaitServing(ctx context.Context, o ServingOptions) (*ServingResult, error) {
	return nil, refusal.New(refusal.Usage, "not yet")
}
