// Package svcproto speaks Oarbank's service protocol 1 from stado's side:
// it runs one operation of a service's protocol executable with the
// operation's timeout and reads the single JSON document it prints. stado
// uses it only for evidence (status, ready, fingerprint); it never starts,
// stops or destroys through it.
//
// An operation runs as the agent would run it (Invocation): the
// protocol's environment from the declaration's protocol block and the
// node, cwd the module bundle's root, the unit's account for a user-scope
// declaration, in a process group of its own that is ended with it.
//
// svcproto imports declaration (the service and protocol block an
// invocation is made from) and nothing else of stado, so both the read
// half (beacon) and the host's end (channel/local) use it.
package svcproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The seven operations of service protocol 1.
const (
	OpFingerprint = "fingerprint"
	OpStart       = "start"
	OpStop        = "stop"
	OpStatus      = "status"
	OpReady       = "ready"
	OpListOwned   = "list_owned"
	OpDestroy     = "destroy"
)

// Timeout returns the protocol's default timeout of op.
func Timeout(op string) time.Duration {
	if testTimeout > 0 {
		return testTimeout
	}
	switch op {
	case OpStart, OpStop:
		return 120 * time.Second
	case OpDestroy:
		return 60 * time.Second
	default:
		return 5 * time.Second
	}
}

// testTimeout replaces every timeout when set (tests only).
var testTimeout time.Duration

// outputMax bounds what an operation may print.
const outputMax = 1 << 20

// Error says why an operation could not be read: it did not start, it
// ran past its timeout, it exited nonzero, or what it printed is not the
// one JSON document of the expected shape.
type Error struct {
	Op    string `json:"op"`
	Cause string `json:"cause"`
}

func (e *Error) Error() string { return e.Op + ": " + e.Cause }

// Status is what status and ready answer.
type Status struct {
	Running bool `json:"running"`
	Ready   bool `json:"ready"`
}

// Fingerprint is the part of a fingerprint answer stado reads.
type Fingerprint struct {
	Healthy bool `json:"healthy"`
	Running bool `json:"running"`
}

// Runner runs argv with op appended and returns its stdout. Run is the real
// one; tests of callers may replace it.
type Runner func(ctx context.Context, argv []string, op string, env []string) ([]byte, error)

// Run runs argv followed by op (and args) with env as its whole
// environment, bounded by op's timeout, and returns its stdout. A nonzero
// exit is an *Error carrying the exit code and the last stderr line. It
// runs in the caller's cwd and account: see Options.Run.
func Run(ctx context.Context, argv []string, op string, env []string, args ...string) ([]byte, error) {
	return Options{}.Run(ctx, argv, op, env, args...)
}

// Credential is the account an operation runs as.
type Credential struct {
	UID, GID uint32
	Groups   []uint32
}

// Options are where and as whom an operation runs, as the agent would run
// it: cwd the module bundle's root, and the account of the unit (a
// user-scope unit's user) rather than the calling process's.
type Options struct {
	// Dir is the operation's cwd; "" means the caller's.
	Dir string
	// Credential, when not nil, is the account the operation runs as
	// (switching needs root; otherwise the start fails and says so).
	Credential *Credential
}

// CredentialOf is the account named name, or nil when it is the one this
// process runs as (nothing to switch). An unknown name is an error.
func CredentialOf(name string) (*Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("run as %s: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("run as %s: uid %q gid %q are not numbers", name, u.Uid, u.Gid)
	}
	if uint64(os.Geteuid()) == uid {
		return nil, nil
	}
	c := &Credential{UID: uint32(uid), GID: uint32(gid), Groups: []uint32{}}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				c.Groups = append(c.Groups, uint32(g))
			}
		}
	}
	return c, nil
}

// Runner returns a Runner running every operation with o.
func (o Options) Runner() Runner {
	return func(ctx context.Context, argv []string, op string, env []string) ([]byte, error) {
		return o.Run(ctx, argv, op, env)
	}
}

// Run is svcproto.Run in o's cwd and account.
func (o Options) Run(ctx context.Context, argv []string, op string, env []string, args ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &Error{Op: op, Cause: "no executable declared"}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(op))
	defer cancel()
	full := append(append(append([]string{}, argv[1:]...), op), args...)
	cmd := exec.CommandContext(ctx, argv[0], full...)
	cmd.Env = env
	cmd.Dir = o.Dir
	var stdout, stderr bytes.Buffer
	out := &limited{w: &stdout, n: outputMax}
	cmd.Stdout = out
	cmd.Stderr = &limited{w: &stderr, n: 64 << 10}
	cmd.WaitDelay = time.Second
	// The operation runs in a process group of its own, ended whole when it
	// returns: what it left running in the background dies with it.
	ownGroup(cmd, o.Credential)
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
		endGroup(cmd)
	}
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &Error{Op: op, Cause: fmt.Sprintf("no answer within %s", Timeout(op))}
	}
	if err != nil {
		var ee *exec.ExitError
		cause := err.Error()
		if errors.As(err, &ee) {
			cause = fmt.Sprintf("exit %d", ee.ExitCode())
		}
		if line := lastLine(stderr.String()); line != "" {
			cause += ": " + line
		}
		return nil, &Error{Op: op, Cause: cause}
	}
	if out.over {
		return nil, &Error{Op: op, Cause: fmt.Sprintf("printed more than %d bytes; one small JSON document was expected", outputMax)}
	}
	return stdout.Bytes(), nil
}

// Environment is what service protocol 1 hands an operation besides the
// conventional variables: values from the declaration and the node.
type Environment struct {
	Service      string // OARBANK_SERVICE: the declaration's name
	Module       string // OARBANK_MODULE: the module's short name
	ModuleData   string // OARBANK_MODULE_DATA; HOME and TMPDIR lie inside it
	NodeID       string // OARBANK_NODE_ID: the node (the registry target)
	Platform     string // OARBANK_PLATFORM: the node's token, linux-amd64
	SettingsFile string // OARBANK_SETTINGS_FILE
	ToolsFile    string // OARBANK_TOOLS_FILE
	LimitsFile   string // OARBANK_LIMITS_FILE
}

// Environ is an operation's whole environment: PATH=path, HOME and TMPDIR
// inside the module's data directory (home/, tmp/), the declaration's env
// in name order, then the protocol's OARBANK_ variables, which win over a
// declared variable of the same name (the last assignment counts). Nothing
// is inherited.
func (e Environment) Environ(path string, declared map[string]string) []string {
	env := []string{"PATH=" + path, "HOME=" + e.ModuleData + "/home", "TMPDIR=" + e.ModuleData + "/tmp"}
	names := make([]string, 0, len(declared))
	for k := range declared {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+declared[k])
	}
	return append(env,
		"OARBANK_SERVICE="+e.Service, "OARBANK_MODULE="+e.Module, "OARBANK_MODULE_DATA="+e.ModuleData,
		"OARBANK_NODE_ID="+e.NodeID, "OARBANK_PLATFORM="+e.Platform, "OARBANK_SETTINGS_FILE="+e.SettingsFile,
		"OARBANK_TOOLS_FILE="+e.ToolsFile, "OARBANK_LIMITS_FILE="+e.LimitsFile)
}

// ReadStatus runs status or ready and decodes its answer strictly: one JSON
// object carrying the booleans running and ready, and nothing after it.
func ReadStatus(ctx context.Context, run Runner, argv []string, op string, env []string) (Status, error) {
	out, err := run(ctx, argv, op, env)
	if err != nil {
		return Status{}, asError(op, err)
	}
	var raw struct {
		Running *bool `json:"running"`
		Ready   *bool `json:"ready"`
	}
	if err := decodeOne(out, &raw); err != nil {
		return Status{}, &Error{Op: op, Cause: err.Error()}
	}
	switch {
	case raw.Running == nil:
		return Status{}, &Error{Op: op, Cause: "the document has no boolean running"}
	case raw.Ready == nil:
		return Status{}, &Error{Op: op, Cause: "the document has no boolean ready"}
	}
	return Status{Running: *raw.Running, Ready: *raw.Ready}, nil
}

// ReadFingerprint runs fingerprint and decodes healthy and running.
func ReadFingerprint(ctx context.Context, run Runner, argv []string, env []string) (Fingerprint, error) {
	out, err := run(ctx, argv, OpFingerprint, env)
	if err != nil {
		return Fingerprint{}, asError(OpFingerprint, err)
	}
	var raw struct {
		Healthy *bool `json:"healthy"`
		Running *bool `json:"running"`
	}
	if err := decodeOne(out, &raw); err != nil {
		return Fingerprint{}, &Error{Op: OpFingerprint, Cause: err.Error()}
	}
	if raw.Healthy == nil {
		return Fingerprint{}, &Error{Op: OpFingerprint, Cause: "the document has no boolean healthy"}
	}
	fp := Fingerprint{Healthy: *raw.Healthy}
	if raw.Running != nil {
		fp.Running = *raw.Running
	}
	return fp, nil
}

func asError(op string, err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Op: op, Cause: err.Error()}
}

// decodeOne decodes exactly one JSON object from data into v.
func decodeOne(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("printed nothing; one JSON document was expected")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not one JSON document: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("printed more than one JSON document")
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 512 {
		l = l[:512]
	}
	return l
}

// limited writes at most n bytes to w and drops the rest, noting that it
// did (over).
type limited struct {
	w    io.Writer
	n    int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	if k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	if k < len(p) {
		l.over = true
	}
	return len(p), nil
}
