package hostend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wisent/stado/units"
)

// ProcExe reads /proc/PID/exe under procRoot ("" means /proc): on Linux
// the kernel's name of the file the process executes, symlinks resolved
// when it was executed. A file replaced since ends in " (deleted)", which
// never names an image.
func ProcExe(procRoot string) func(ctx context.Context, scope, unit string, pid int) (string, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return func(_ context.Context, _, _ string, pid int) (string, error) {
		if pid <= 0 {
			return "", fmt.Errorf("no process: pid %d", pid)
		}
		exe, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "exe"))
		if err != nil {
			return "", fmt.Errorf("read the executable of pid %d: %w", pid, err)
		}
		return exe, nil
	}
}

// LaunchctlPrint returns the output of `launchctl print` for the job unit
// of scope (stdout and stderr together).
type LaunchctlPrint func(ctx context.Context, scope, unit string) ([]byte, error)

// LaunchctlExe names the executable of a launchd job's process from
// `launchctl print` (units.ParseLaunchctlPrint): the job's program (its
// first argument when it names none), with symlinks resolved, when the job
// runs pid. darwin has no /proc: launchd execs the program path it was
// given, so the path the current link resolves to while pid runs is the
// image it executed (the link is switched only by an activation, which
// holds the host's activation lock).
func LaunchctlExe(print LaunchctlPrint) func(ctx context.Context, scope, unit string, pid int) (string, error) {
	return func(ctx context.Context, scope, unit string, pid int) (string, error) {
		out, err := print(ctx, scope, unit)
		if err != nil && len(out) == 0 {
			return "", fmt.Errorf("launchctl print %s: %w", unit, err)
		}
		st, perr := units.ParseLaunchctlPrint(out)
		if perr != nil {
			return "", perr
		}
		if !st.Found {
			return "", fmt.Errorf("launchd does not hold %s", unit)
		}
		if st.PID != pid {
			return "", fmt.Errorf("%s runs pid %d, not %d", unit, st.PID, pid)
		}
		prog := st.Program
		if prog == "" && len(st.Arguments) > 0 {
			prog = st.Arguments[0]
		}
		if prog == "" {
			return "", errors.New("launchctl print names no program of " + unit)
		}
		if r, err := filepath.EvalSymlinks(prog); err == nil {
			return r, nil
		}
		return prog, nil
	}
}

// LaunchctlPrintOf runs /bin/launchctl print for a job of the system domain
// (scope system) or of uid's gui domain (scope user) through r.
func LaunchctlPrintOf(r units.Runner, uid int) LaunchctlPrint {
	return func(ctx context.Context, scope, unit string) ([]byte, error) {
		domain := "system"
		if scope == "user" {
			domain = units.GUIDomain(uid)
		}
		out, err := r.Run(ctx, []string{"/bin/launchctl", "print", domain + "/" + unit})
		var ee *units.ExitError
		if errors.As(err, &ee) && !strings.Contains(string(out), ee.Stderr) {
			out = append(out, []byte(ee.Stderr)...)
		}
		return out, err
	}
}
