package register

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

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// HomeFile is the register's path under a home directory.
const HomeFile = ".stado/service-recoveries.jsonl"

// File is the append-only recovery register of one machine, oldest first.
// Append is safe for concurrent use by many processes (it locks a sidecar
// .lock file); Read never changes the file.
type File struct {
	Path string
}

// Home returns the register under home ($HOME).
func Home(home string) *File {
	return &File{Path: filepath.Join(home, HomeFile)}
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

// Cause is the error without the path it names: the *fs.PathError's own
// error when there is one.
func (e *FileError) Cause() string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return pe.Err.Error()
	}
	return e.Err.Error()
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
func (r *File) Read() ([]Recovery, error) {
	data, err := os.ReadFile(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Op: "read", File: r.Path, Err: err}
	}
	return Parse(r.Path, data)
}

// Parse reads register lines (data, read from file) oldest first. Blank
// lines are skipped. A line that is not exactly one recovery — unknown
// fields, another kind, no service, host or start — is a *LineError naming
// file and the line's number.
func Parse(file string, data []byte) ([]Recovery, error) {
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
		case rec.Kind != Kind:
			return nil, &LineError{File: file, Line: n, Reason: fmt.Sprintf("kind is %q, want %q", rec.Kind, Kind)}
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

// Append adds rec as the newest row (Kind and State default to Kind and
// Attempted). The file is replaced atomically under the sidecar lock:
// read, append, write a temp file, fsync, rename, fsync the directory.
// Failures are *FileError; nothing is partly written.
func (r *File) Append(rec Recovery) error {
	if rec.Kind == "" {
		rec.Kind = Kind
	}
	if rec.State == "" {
		rec.State = Attempted
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
