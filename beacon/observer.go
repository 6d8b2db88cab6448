package beacon

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/wisent/stado/units"
)

// UnitsObserver observes this host through a units.Manager (systemd over
// D-Bus, launchd over launchctl). Undeclared units are the loaded ones
// whose unit file an administrator installed in one of AdminDirs (for
// systemd /etc/systemd/system), so the init system's own units are not
// reported as undeclared.
type UnitsObserver struct {
	Manager   units.Manager
	AdminDirs []string
}

// Observe reads every unit with the manager's batched query.
func (o *UnitsObserver) Observe(ctx context.Context, names []string) ([]UnitReport, error) {
	vs, err := o.Manager.ShowMany(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]UnitReport, len(vs))
	for i, v := range vs {
		out[i] = reportFromVerdict(v)
	}
	return out, nil
}

func reportFromVerdict(v units.Verdict) UnitReport {
	r := UnitReport{Unit: v.Unit, State: v.State, PID: v.PID, Starts: v.Starts, Sentence: v.Sentence, Sub: v.Detail}
	if v.State == StateFailed || v.State == StateFailing || v.LastExit != 0 {
		code := v.LastExit
		r.LastExit = &code
	}
	return r
}

// Loaded lists the loaded units installed in the admin directories.
func (o *UnitsObserver) Loaded(ctx context.Context) ([]string, error) {
	loaded, err := o.Manager.ListLoaded(ctx)
	if err != nil {
		return nil, err
	}
	if len(o.AdminDirs) == 0 {
		return loaded, nil
	}
	installed := map[string]bool{}
	for _, dir := range o.AdminDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == "/dev/null" {
				continue // a mask, not an installed unit
			}
			installed[e.Name()] = true
			installed[strings.TrimSuffix(e.Name(), ".plist")] = true
		}
	}
	var out []string
	for _, u := range loaded {
		if installed[u] {
			out = append(out, u)
		}
	}
	return out, nil
}

// LastLine returns the message of the unit's last log line.
func (o *UnitsObserver) LastLine(ctx context.Context, unit string) (string, error) {
	lines, err := o.Manager.Logs(ctx, unit, 1)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return logMessage(lines[len(lines)-1]), nil
}

// logMessage drops a journal short-iso prefix ("TIME HOST UNIT[PID]: ").
func logMessage(line string) string {
	if i := strings.Index(line, "]: "); i >= 0 {
		return line[i+3:]
	}
	return line
}
