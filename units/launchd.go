package units

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"howett.net/plist"

	"github.com/wisent/stado/declaration"
)

// Launchd is the Manager for launchd, driving launchctl through a Runner
// with bootstrap, bootout, kickstart and print (never the deprecated
// load/unload). One Launchd serves one domain: "system" (daemons in
// /Library/LaunchDaemons) or "gui/<uid>" (agents in
// <Home>/Library/LaunchAgents).
type Launchd struct {
	Runner Runner
	Domain string
	Home   string
	// Launchctl is the launchctl executable; empty means /bin/launchctl.
	Launchctl string
	// User names the owner of a gui/<uid> domain in refusals; optional.
	User string
	// Scope is the declaration scope the manager serves; "" means the one
	// its domain implies (system for "system", else user). A user-scope
	// manager of a declared system domain sets it (LaunchdFor).
	Scope string

	mu    sync.Mutex
	paths map[string]string // label -> plist path installed by this Launchd
}

// NewLaunchd returns a Launchd for domain whose user home is home.
func NewLaunchd(r Runner, domain, home string) *Launchd {
	return &Launchd{Runner: r, Domain: domain, Home: home}
}

var _ Manager = (*Launchd)(nil)

func (l *Launchd) launchctl(args ...string) []string {
	bin := l.Launchctl
	if bin == "" {
		bin = "/bin/launchctl"
	}
	return append([]string{bin}, args...)
}

func (l *Launchd) target(label string) string { return l.Domain + "/" + label }

func (l *Launchd) scope() string {
	if l.Scope != "" {
		return l.Scope
	}
	if l.Domain == "system" {
		return declaration.ScopeSystem
	}
	return declaration.ScopeUser
}

// plistPath is where label's plist lives: what Install wrote, else the
// default for the domain.
func (l *Launchd) plistPath(label string) string {
	l.mu.Lock()
	p, ok := l.paths[label]
	l.mu.Unlock()
	if ok {
		return p
	}
	return UnitPath(declaration.Service{Unit: label, Scope: l.scope()}, declaration.OSDarwin, l.Home)
}

// loadedPlistPath is the plist launchd loaded label from, as `launchctl
// print` names it, when that is a property list file; else plistPath.
func (l *Launchd) loadedPlistPath(ctx context.Context, label string) string {
	if st, err := l.print(ctx, label); err == nil && st.Found && strings.HasSuffix(st.Path, ".plist") && strings.HasPrefix(st.Path, "/") {
		return st.Path
	}
	return l.plistPath(label)
}

// print runs launchctl print for label and parses it; a label launchd does
// not hold is Found false.
func (l *Launchd) print(ctx context.Context, label string) (LaunchdState, error) {
	out, err := l.Runner.Run(ctx, l.launchctl("print", l.target(label)))
	var ee *ExitError
	if errors.As(err, &ee) {
		if down := l.domainDown(append(out, []byte(ee.Stderr)...)); down != nil {
			return LaunchdState{}, down
		}
		st, perr := ParseLaunchctlPrint(append(out, []byte(ee.Stderr)...))
		if perr == nil && !st.Found {
			return st, nil
		}
		return LaunchdState{}, fmt.Errorf("read %s: %w", l.target(label), err)
	}
	if err != nil {
		return LaunchdState{}, fmt.Errorf("read %s: %w", l.target(label), err)
	}
	st, err := ParseLaunchctlPrint(out)
	if err != nil {
		return LaunchdState{}, fmt.Errorf("read %s: %w", l.target(label), err)
	}
	if st.Label == "" {
		st.Label = label
	}
	return st, nil
}

func (l *Launchd) run(ctx context.Context, args ...string) error {
	_, err := l.Runner.Run(ctx, l.launchctl(args...))
	return err
}

// Install writes the plist and the log directory. A changed plist of a
// loaded job is booted out, so the next Start or Restart bootstraps the new
// definition; equal bytes touch nothing.
func (l *Launchd) Install(ctx context.Context, s declaration.Service, content []byte) (InstallResult, error) {
	path := UnitPath(s, declaration.OSDarwin, l.Home)
	action, err := writeIfChanged(path, content, 0o644)
	if err != nil {
		return InstallResult{}, fmt.Errorf("install %s: %w", s.Unit, err)
	}
	l.mu.Lock()
	if l.paths == nil {
		l.paths = map[string]string{}
	}
	l.paths[s.Unit] = path
	l.mu.Unlock()
	res := InstallResult{Action: action, Path: path}
	if action == ActionUnchanged {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(LaunchdLogPath(l.Home, s.Unit)), 0o755); err != nil {
		return res, fmt.Errorf("install %s: %w", s.Unit, err)
	}
	st, err := l.print(ctx, s.Unit)
	if err != nil {
		return res, fmt.Errorf("install %s: %w", s.Unit, err)
	}
	if st.Found {
		if err := l.run(ctx, "bootout", l.target(s.Unit)); err != nil {
			return res, fmt.Errorf("install %s: unload the old definition: %w", s.Unit, err)
		}
	}
	return res, nil
}

// Remove boots the job out when loaded and deletes its plist.
func (l *Launchd) Remove(ctx context.Context, s declaration.Service) error {
	if err := l.Stop(ctx, s.Unit); err != nil {
		return err
	}
	path := UnitPath(s, declaration.OSDarwin, l.Home)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// Start bootstraps the job when launchd does not hold it, kickstarts it when
// it is loaded without a process, and leaves a running job alone.
func (l *Launchd) Start(ctx context.Context, label string) error {
	st, err := l.print(ctx, label)
	if err != nil {
		return fmt.Errorf("start %s: %w", label, err)
	}
	switch {
	case !st.Found:
		err = l.run(ctx, "bootstrap", l.Domain, l.plistPath(label))
	case st.PID > 0:
		return nil
	default:
		err = l.run(ctx, "kickstart", l.target(label))
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", label, err)
	}
	return nil
}

// Stop boots the job out: with KeepAlive, launchd would start a merely
// killed job again. A job launchd does not hold is already stopped.
func (l *Launchd) Stop(ctx context.Context, label string) error {
	st, err := l.print(ctx, label)
	if err != nil {
		return fmt.Errorf("stop %s: %w", label, err)
	}
	if !st.Found {
		return nil
	}
	if err := l.run(ctx, "bootout", l.target(label)); err != nil {
		return fmt.Errorf("stop %s: %w", label, err)
	}
	return nil
}

// Restart kills and restarts a loaded job (kickstart -k) and bootstraps one
// launchd does not hold.
func (l *Launchd) Restart(ctx context.Context, label string) error {
	st, err := l.print(ctx, label)
	if err != nil {
		return fmt.Errorf("restart %s: %w", label, err)
	}
	if !st.Found {
		err = l.run(ctx, "bootstrap", l.Domain, l.plistPath(label))
	} else {
		err = l.run(ctx, "kickstart", "-k", l.target(label))
	}
	if err != nil {
		return fmt.Errorf("restart %s: %w", label, err)
	}
	return nil
}

// Show reads the job's verdict from launchctl print.
func (l *Launchd) Show(ctx context.Context, label string) (Verdict, error) {
	st, err := l.print(ctx, label)
	if err != nil {
		return Verdict{}, err
	}
	return VerdictFromLaunchd(label, st), nil
}

// ShowMany runs one launchctl print per label: launchctl has no batch read
// of service state.
func (l *Launchd) ShowMany(ctx context.Context, labels []string) ([]Verdict, error) {
	out := make([]Verdict, 0, len(labels))
	for _, label := range labels {
		v, err := l.Show(ctx, label)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Logs reads the last lines of the files the job's plist declares
// (StandardOutPath, then StandardErrorPath when it is another file), or of
// <Home>/.stado/logs/<label>.log when it declares none.
func (l *Launchd) Logs(ctx context.Context, label string, lines int) ([]string, error) {
	files := []string{LaunchdLogPath(l.Home, label)}
	if data, err := os.ReadFile(l.loadedPlistPath(ctx, label)); err == nil {
		var job struct {
			StandardOutPath   string `plist:"StandardOutPath"`
			StandardErrorPath string `plist:"StandardErrorPath"`
		}
		if _, err := plist.Unmarshal(data, &job); err == nil {
			switch {
			case job.StandardOutPath != "" && job.StandardErrorPath != "" && job.StandardErrorPath != job.StandardOutPath:
				files = []string{job.StandardOutPath, job.StandardErrorPath}
			case job.StandardOutPath != "":
				files = []string{job.StandardOutPath}
			case job.StandardErrorPath != "":
				files = []string{job.StandardErrorPath}
			}
		}
	}
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("logs of %s: %w", label, err)
		}
		ls := splitLines(data)
		if lines > 0 && len(ls) > lines {
			ls = ls[len(ls)-lines:]
		}
		out = append(out, ls...)
	}
	return out, nil
}

// ListLoaded names the jobs `launchctl list` shows for the caller's domain.
func (l *Launchd) ListLoaded(ctx context.Context) ([]string, error) {
	out, err := l.Runner.Run(ctx, l.launchctl("list"))
	if err != nil {
		return nil, fmt.Errorf("list launchd jobs: %w", err)
	}
	var labels []string
	for i, line := range splitLines(out) {
		f := strings.Fields(line)
		if len(f) != 3 || (i == 0 && f[0] == "PID") {
			continue
		}
		labels = append(labels, f[2])
	}
	return labels, nil
}
