package channel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
)

// The recoveries verb reads the host's recovery register, changing
// nothing. It takes no arguments: the register is small and the caller
// filters it. It was added within protocol 2 (a host whose stado predates
// it refuses it as unknown_verb, naming the verb), because every other
// verb is unchanged.

// RegisterFile is a host's recovery register, under its home: one
// Recovery per line, oldest first, appended by the host's answering and
// peer passes (package repair writes it).
const RegisterFile = ".stado/service-recoveries.jsonl"

// RecoveriesResult is a host's recovery register as it reads it.
type RecoveriesResult struct {
	// File is the register's path on the host.
	File string `json:"file"`
	// Recoveries are its rows, oldest first; empty when there is no file.
	Recoveries []Recovery `json:"recoveries"`
}

// Recovery is one register row as it crosses the channel: the same fields
// and JSON as repair.Recovery, which writes it (a test in repair holds the
// two to one encoding).
type Recovery struct {
	Kind          string             `json:"kind"`
	State         string             `json:"state"`
	When          time.Time          `json:"when"`
	Service       string             `json:"service"`
	Host          string             `json:"host"`
	Unit          string             `json:"unit"`
	Scope         string             `json:"scope,omitempty"`
	Question      RecoveryQuestion   `json:"question"`
	Declaration   *catalog.Answering `json:"declaration"`
	Since         time.Time          `json:"since"`
	WaitedSeconds float64            `json:"waited_seconds"`
	BoundSeconds  float64            `json:"bound_seconds"`
	HeldRequests  int                `json:"held_requests"`
	Steps         []StepResult       `json:"repair_steps"`
	Restart       *RecoveryRestart   `json:"restart,omitempty"`
	Alerts        []RecoveryAlert    `json:"alerts"`
	Complete      bool               `json:"complete"`
	ObservedBy    string             `json:"observed_by,omitempty"`
}

// RecoveryQuestion is the question that stood.
type RecoveryQuestion struct {
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Body     json.RawMessage `json:"body,omitempty"`
	Endpoint string          `json:"endpoint"`
	Repair   []string        `json:"repair"`
}

// RecoveryRestart is what the restart of a recovery answered.
type RecoveryRestart struct {
	Host      string    `json:"host"`
	Unit      string    `json:"unit"`
	Scope     string    `json:"scope"`
	OK        bool      `json:"ok"`
	Answer    string    `json:"answer"`
	PID       int       `json:"pid,omitempty"`
	Code      string    `json:"code,omitempty"`
	Refusal   string    `json:"refusal,omitempty"`
	At        time.Time `json:"at"`
	ElapsedMS int64     `json:"elapsed_ms"`
}

// RecoveryAlert is what one alert channel answered.
type RecoveryAlert struct {
	Channel string `json:"channel"`
	Type    string `json:"type"`
	OK      bool   `json:"ok"`
	Answer  string `json:"answer,omitempty"`
	Cause   string `json:"cause,omitempty"`
}

// recoveryKind marks every register row.
const recoveryKind = "stado.recovery"

// ReadRegister reads the register at path, oldest first. A missing file
// holds no recovery (nil, nil). A file that cannot be read, or a line that
// is not a recovery, is a refusal (register_unreadable) naming the file
// and, for a line, its number.
func ReadRegister(path string) ([]Recovery, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refusal.New(refusal.RegisterUnreadable, "read %s: %v", path, err)
	}
	var out []Recovery
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	bad := func(reason string) error {
		return refusal.New(refusal.RegisterUnreadable, "%s:%d: not a recovery: %s", path, n, reason)
	}
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec Recovery
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, bad(err.Error())
		}
		switch {
		case dec.More():
			return nil, bad("more than one JSON value")
		case rec.Kind != recoveryKind:
			return nil, bad(fmt.Sprintf("kind is %q, want %q", rec.Kind, recoveryKind))
		case rec.Service == "" || rec.Host == "":
			return nil, bad("no service or host")
		case rec.When.IsZero():
			return nil, bad("no when")
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		n++
		return nil, bad(err.Error())
	}
	return out, nil
}

// Recoveries implements Host.
func (c *Client) Recoveries(ctx context.Context) (RecoveriesResult, error) {
	var res RecoveriesResult
	if err := c.call(ctx, Command{Verb: VerbRecoveries}, nil, &res); err != nil {
		return res, err
	}
	if res.Recoveries == nil {
		res.Recoveries = []Recovery{}
	}
	return res, nil
}
