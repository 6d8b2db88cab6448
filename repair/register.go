package repair

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// RecoveryKind marks every register row.
const RecoveryKind = "stado.recovery"

// Recovery states.
const (
	// RecoveryRunning is reported in a beacon while steps and restart run.
	RecoveryRunning = "running"
	// RecoveryAttempted is every finished attempt, complete or not.
	RecoveryAttempted = "attempted"
)

// Recovery is one attempt to recover a standing service: a register row,
// and the recovery a beacon reports beside the question.
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
	Question    beacon.Question    `json:"question"`
	Declaration *catalog.Answering `json:"declaration"`
	// Since is when the standing question was sent.
	Since         time.Time `json:"since"`
	WaitedSeconds float64   `json:"waited_seconds"`
	BoundSeconds  float64   `json:"bound_seconds"`
	// HeldRequests counts the client requests seen held (0 for a host's
	// own question; a peer recovery counts its waits).
	HeldRequests int            `json:"held_requests"`
	Steps        []StepReport   `json:"repair_steps"`
	Restart      *RestartReport `json:"restart,omitempty"`
	Alerts       []AlertOutcome `json:"alerts"`
	Complete     bool           `json:"complete"`
	ObservedBy   string         `json:"observed_by,omitempty"`
}

// RegisterFile is the register's path under a home directory.
const RegisterFile = channel.RegisterFile

// Register is the append-only recovery register of one machine, oldest
// first. Append is safe for concurrent use by many processes (it locks a
// sidecar .lock file).
type Register struct {
	Path string
}

// HomeRegister returns the register under home ($HOME).
func HomeRegister(home string) *Register {
	return &Register{Path: filepath.Join(home, RegisterFile)}
}

// FileError is a register operation that failed: Op is the file operation
// (mkdir, lock, read, write, fsync, rename, ...), File the path.
type FileError struct {
	Op   string
	File string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.File, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Refusal returns the beacon's form of e.
func (e *FileError) Refusal() *beacon.FileRefusal {
	return &beacon.FileRefusal{Op: e.Op, File: e.File, Cause: causeOf(e.Err)}
}

func causeOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// LineError refuses a register line that is not a recovery.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: not a recovery: %s", e.File, e.Line, e.Reason)
}

// RefusalCode is the stable machine code the CLI reports.
func (e *LineError) RefusalCode() refusal.Code { return refusal.RegisterUnreadable }

// Read returns every recovery, oldest first. A missing register holds
// none (nil, nil). An unreadable file is a *FileError; a line that is not
// a recovery is a *LineError naming the file and line number.
func (r *Register) Read() ([]Recovery, error) {
	data, err := os.ReadFile(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Op: "read", File: r.Path, Err: err}
	}
	return parseRegister(r.Path, data)
}

func parseRegister(file string, data []byte) ([]Recovery, error) {
	var out []Recovery
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
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
			return nil, &LineError{File: file, Line: n, Reason: err.Error()}
		}
		if dec.More() {
			return nil, &LineError{File: file, Line: n, Reason: "more than one JSON value"}
		}
		switch {
		case rec.Kind != RecoveryKind:
			return nil, &LineError{File: file, Line: n, Reason: fmt.Sprintf("kind is %q, want %q", rec.Kind, RecoveryKind)}
		case rec.Service == "" || rec.Host == "":
			return nil, &LineError{File: file, Line: n, Reason: "no service or host"}
		case rec.When.IsZero():
			return nil, &LineError{File: file, Line: n, Reason: "no when"}
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, &LineError{File: file, Line: n + 1, Reason: err.Error()}
	}
	return out, nil
}

// Append adds rec as the newest row. The file is replaced atomically under
// the sidecar lock: read, append, write a temp file, fsync, rename, fsync
// the directory. Failures are *FileError; nothing is partly written.
func (r *Register) Append(rec Recovery) error {
	if rec.Kind == "" {
		rec.Kind = RecoveryKind
	}
	if rec.State == "" {
		rec.State = RecoveryAttempted
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return &FileError{Op: "encode", File: r.Path, Err: err}
	}
	dir := filepath.Dir(r.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &FileError{Op: "mkdir", File: dir, Err: err}
	}
	unlock, err := safefile.Lock(context.Background(), r.Path+".lock")
	if err != nil {
		return &FileError{Op: "lock", File: r.Path + ".lock", Err: err}
	}
	defer unlock()
	old, err := os.ReadFile(r.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &FileError{Op: "read", File: r.Path, Err: err}
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if err := safefile.Write(r.Path, append(append(old, line...), '\n'), 0o600); err != nil {
		return &FileError{Op: "replace", File: r.Path, Err: err}
	}
	return nil
}

// FromChannel is a register row read over a host's channel (the
// recoveries verb) as a Recovery. The two types share one JSON encoding
// (TestRegisterRowsCrossTheChannelUnchanged), so the row converts through
// it; a row that would not is returned as far as it decoded.
func FromChannel(r channel.Recovery) Recovery {
	var out Recovery
	if b, err := json.Marshal(r); err == nil {
		_ = json.Unmarshal(b, &out)
	}
	return out
}
