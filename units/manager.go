package units

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/safefile"
)

// Install actions.
const (
	ActionInstalled = "installed" // no unit file was there
	ActionUpdated   = "updated"   // the file held other bytes
	ActionUnchanged = "unchanged" // the file held exactly these bytes; nothing was touched
)

// InstallResult says what Install did and where.
type InstallResult struct {
	Action string `json:"action"`
	Path   string `json:"path"`
}

// Manager drives this host's init system. Every method touches the host.
// Implementations are safe for concurrent use.
type Manager interface {
	// Install writes content (a rendering of s) to s's unit path atomically
	// and makes the init system read it. Equal bytes on disk change nothing:
	// no reload, no restart, ActionUnchanged.
	Install(ctx context.Context, s declaration.Service, content []byte) (InstallResult, error)
	// Remove stops and unloads s's unit and deletes its file. Removing a unit
	// that is not there succeeds.
	Remove(ctx context.Context, s declaration.Service) error
	// Start starts the unit, clearing a failed or start-limited state
	// first, and waits for the result.
	Start(ctx context.Context, unit string) error
	// Stop stops the unit and waits for the result.
	Stop(ctx context.Context, unit string) error
	// Restart restarts the unit (starting it if it is stopped), clearing a
	// failed state first, and waits for the result.
	Restart(ctx context.Context, unit string) error
	// Show reads the unit's verdict; a unit the init system does not hold
	// is StateMissing, not an error.
	Show(ctx context.Context, unit string) (Verdict, error)
	// ShowMany reads many verdicts in as few round trips as the init system
	// allows, in the order of units.
	ShowMany(ctx context.Context, units []string) ([]Verdict, error)
	// Logs returns the last lines the unit's program printed, oldest first.
	Logs(ctx context.Context, unit string, lines int) ([]string, error)
	// ListLoaded names the services the init system holds.
	ListLoaded(ctx context.Context) ([]string, error)
}

// LoadedAmongLister is a Manager that can say which of some units it holds
// without listing all it holds: a host process asks of the few units an
// administrator installed, not of every unit the init system runs.
type LoadedAmongLister interface {
	// ListLoadedAmong names the services among names that the init system
	// holds, in its order; none for no names.
	ListLoadedAmong(ctx context.Context, names []string) ([]string, error)
}

// LoadedAmong names the services among names that m holds: through m's
// ListLoadedAmong when it has one, else its whole listing kept to names.
func LoadedAmong(ctx context.Context, m Manager, names []string) ([]string, error) {
	if l, ok := m.(LoadedAmongLister); ok {
		return l.ListLoadedAmong(ctx, names)
	}
	all, err := m.ListLoaded(ctx)
	if err != nil {
		return nil, err
	}
	asked := make(map[string]bool, len(names))
	for _, n := range names {
		asked[n] = true
	}
	var out []string
	for _, u := range all {
		if asked[u] {
			out = append(out, u)
		}
	}
	return out, nil
}

// Runner runs a command given as an argv array, never through a shell, and
// returns its standard output. A nonzero exit is an *ExitError.
type Runner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// ExecRunner runs commands on this machine with os/exec.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("run: empty argv")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, &ExitError{Argv: argv, Code: ee.ExitCode(), Stderr: lastLines(stderr.String(), 5)}
	}
	if err != nil {
		return out, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return out, nil
}

func lastLines(s string, n int) string {
	lines := splitLines([]byte(s))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(toBytes(lines), []byte("\n")))
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func splitLines(b []byte) []string {
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte("\n"))
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(bytes.TrimRight(p, "\r"))
	}
	return out
}

// writeIfChanged replaces path with content atomically unless it already
// holds exactly content, and says which it did.
func writeIfChanged(path string, content []byte, perm fs.FileMode) (string, error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		return ActionUnchanged, nil
	case err == nil:
		if err := safefile.Write(path, content, perm); err != nil {
			return "", err
		}
		return ActionUpdated, nil
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := safefile.Write(path, content, perm); err != nil {
			return "", err
		}
		return ActionInstalled, nil
	default:
		return "", fmt.Errorf("read %s: %w", path, err)
	}
}
