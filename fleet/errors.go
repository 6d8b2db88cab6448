package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/units"
)

// Stages of a host's failure beyond the channel's own (connect, auth,
// host_key, remote_refusal, remote_exit).
const (
	StagePlan     = "plan"     // refused from the registry and catalog alone, before any connection
	StageRegistry = "registry" // the registry write failed
	StageConfirm  = "confirm"  // the unit did not hold after its start
)

// CodeFailure is the code of an error that is not a refusal.
const CodeFailure = "failure"

// Classify says whether err is a refusal (nothing was changed; the caller
// asked for something it may not have) and its stable code, or a failure.
// A refusal is any error whose chain carries a refusal code (refusal.Coded):
// the store's and the registry's sentinels carry theirs.
func Classify(err error) (code string, refused bool) {
	if err == nil {
		return "", false
	}
	if c, ok := refusal.CodeOf(err); ok {
		return string(c), true
	}
	return CodeFailure, false
}

// HostError is one host's failure in a result: which host, at which stage,
// the remote exit status and stderr tail where there was one, and the code.
type HostError struct {
	Host       string `json:"host"`
	Address    string `json:"address,omitempty"`
	Stage      string `json:"stage"`
	ExitStatus int    `json:"exit_status,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	Code       string `json:"code"`
	Refused    bool   `json:"refused"`
	Message    string `json:"message"`
}

// Outcome is the word a host's line says it ended with: "refused" for a
// refusal (exit 3, nothing changed), else "failed".
func (e *HostError) Outcome() string {
	if e.Refused {
		return "refused"
	}
	return "failed"
}

// stagedError is a failure on this side with the stage it happened at.
type stagedError struct {
	host  string
	stage string
	err   error
}

func (e *stagedError) Error() string { return e.host + ": " + e.err.Error() }
func (e *stagedError) Unwrap() error { return e.err }

// FailingError is a unit that does not run after it was started.
type FailingError struct {
	Host    string
	Verdict units.Verdict
}

func (e *FailingError) Error() string {
	msg := fmt.Sprintf("%s: %s is %s after its start", e.Host, e.Verdict.Unit, e.Verdict.State)
	if e.Verdict.Sentence != "" {
		msg += ": " + e.Verdict.Sentence
	} else if e.Verdict.Starts > 0 {
		msg += fmt.Sprintf(": last exit %d, started %d time(s)", e.Verdict.LastExit, e.Verdict.Starts)
	}
	return msg
}

// DescribeHostError is err as a HostError of host; nil for nil.
func DescribeHostError(host string, err error) *HostError {
	if err == nil {
		return nil
	}
	code, refused := Classify(err)
	he := &HostError{Host: host, Code: code, Refused: refused, Message: err.Error()}
	var re *channel.RemoteError
	var se *stagedError
	var fe *FailingError
	switch {
	case errors.As(err, &re):
		he.Stage, he.Address, he.ExitStatus, he.StderrTail = string(re.Stage), re.Address, re.ExitStatus, re.StderrTail
	case errors.As(err, &se):
		he.Stage = se.stage
	case errors.As(err, &fe):
		he.Stage, he.Code = StageConfirm, string(refusal.Failing)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		he.Stage = string(channel.StageConnect)
	default:
		he.Stage = StagePlan
	}
	return he
}

// HostPrefixed makes sure a message starts with the host's name.
func HostPrefixed(host string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, host+":") {
		return msg
	}
	return host + ": " + msg
}

// FanOutError is the error an operation on many hosts ends with: nil when
// every host succeeded; a failure when any host failed; otherwise the first
// refusal, with its code, counting the others.
func FanOutError(what string, errs map[string]error, order []string) error {
	var firstFail, firstRefusal error
	failed := 0
	for _, h := range order {
		err := errs[h]
		if err == nil {
			continue
		}
		failed++
		if _, refused := Classify(err); !refused {
			if firstFail == nil {
				firstFail = err
			}
		} else if firstRefusal == nil {
			firstRefusal = err
		}
	}
	switch {
	case failed == 0:
		return nil
	case firstFail != nil:
		return fmt.Errorf("%s: %d of %d host(s) failed; first: %w", what, failed, len(order), firstFail)
	case failed == 1:
		return firstRefusal
	default:
		code, _ := Classify(firstRefusal)
		return &refusal.Error{Code: refusal.Code(code), Message: fmt.Sprintf("%s: %d of %d host(s) refused; first: %s", what, failed, len(order), firstRefusal), Err: firstRefusal}
	}
}

// notLoadedOn turns a host's not_found refusal into one naming the host.
func notLoadedOn(err error, unit, host string) error {
	var re *channel.RemoteError
	if errors.As(err, &re) && re.Stage == channel.StageRemoteRefusal && refusal.Is(err, refusal.NotFound) {
		return &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("unit %s is not loaded on %s", unit, host), Err: err}
	}
	return err
}
