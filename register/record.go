package register

import (
	"encoding/json"
	"time"

	"github.com/wisent/stado/catalog"
)

// Kind marks every register row.
const Kind = "stado.recovery"

// Recovery states.
const (
	// Running is reported in a beacon while steps and restart run.
	Running = "running"
	// Attempted is every finished attempt, complete or not.
	Attempted = "attempted"
)

// Recovery is one attempt to recover a standing service: a register row,
// the row the recoveries verb returns, and the recovery a beacon reports
// beside the question. Its JSON is the register's line format
// (docs/answering.md); a field added here is a field every host writes.
type Recovery struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	// When is when the attempt started.
	When    time.Time `json:"when"`
	Service string    `json:"service"`
	Host    string    `json:"host"`
	Unit    string    `json:"unit"`
	Scope   string    `json:"scope,omitempty"`
	// Question is the request that stood; Declaration is the exact
	// answering declaration it was asked from.
	Question    Question           `json:"question"`
	Declaration *catalog.Answering `json:"declaration"`
	// Since is when the standing question was sent.
	Since         time.Time `json:"since"`
	WaitedSeconds float64   `json:"waited_seconds"`
	BoundSeconds  float64   `json:"bound_seconds"`
	// HeldRequests counts the client requests seen held (0 for a host's
	// own question; a peer recovery counts its waits).
	HeldRequests int            `json:"held_requests"`
	Steps        []StepResult   `json:"repair_steps"`
	Restart      *Restart       `json:"restart,omitempty"`
	Alerts       []AlertOutcome `json:"alerts"`
	Complete     bool           `json:"complete"`
	ObservedBy   string         `json:"observed_by,omitempty"`
}

// Question is the answering question that stood: the beacon's question
// (beacon.Question has the same fields and JSON, so one converts to the
// other).
type Question struct {
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Body     json.RawMessage `json:"body,omitempty"`
	Endpoint string          `json:"endpoint"`
	Repair   []string        `json:"repair"`
}

// StepResult is what one repair step did on a host. OK is true only when
// the payload ran and exited 0; otherwise Code and Refusal say why. It is
// also the result of the host channel's repair-step verb.
type StepResult struct {
	Step     string    `json:"step"`
	Host     string    `json:"host"`
	Argv     []string  `json:"argv,omitempty"`
	OK       bool      `json:"ok"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Output   string    `json:"output,omitempty"` // the last lines it printed
	Code     string    `json:"code,omitempty"`
	Refusal  string    `json:"refusal,omitempty"`
	At       time.Time `json:"at"`
	// ElapsedMS is how long the payload ran.
	ElapsedMS int64 `json:"elapsed_ms"`
}

// Restart is what the restart of one unit did. OK is true only when the
// init system finished the restart job; Answer is its own word.
type Restart struct {
	Host      string    `json:"host"`
	Unit      string    `json:"unit"`
	Scope     string    `json:"scope"`
	OK        bool      `json:"ok"`
	Answer    string    `json:"answer"`
	PID       int       `json:"pid,omitempty"` // the unit's main pid after the restart, when read
	Code      string    `json:"code,omitempty"`
	Refusal   string    `json:"refusal,omitempty"`
	At        time.Time `json:"at"`
	ElapsedMS int64     `json:"elapsed_ms"`
}

// AlertNotRun is the Answer of an alert channel that was deliberately not
// run by the process that delivered (a command channel outside its owning
// host's host process): not delivered, and not a failure of the channel.
const AlertNotRun = "not run"

// AlertOutcome is one alert channel's answer to one alert.
type AlertOutcome struct {
	Channel string `json:"channel"`
	Type    string `json:"type"` // webhook or command
	OK      bool   `json:"ok"`
	// Answer is the channel's own answer ("HTTP 200", "exit 0"), or
	// AlertNotRun for a channel that was not run here (Cause says why).
	Answer string `json:"answer,omitempty"`
	Cause  string `json:"cause,omitempty"`
}
