package units

import "context"

// Job is the unit a port reading concerns: its name (a systemd unit, a
// launchd label) and the pid of its main process as the init system
// reports it (Verdict.PID; 0 when none runs or it is not known).
type Job struct {
	Unit string
	PID  int
}

// PortReader reads which TCP sockets listen on this host and whose
// processes hold them: ProcPorts from /proc and cgroups under systemd,
// LsofPorts from lsof and the job's process tree under launchd (which has
// no cgroups). HostPortReader is the one of the OS stado was built for.
// Every method touches the host. Implementations are safe for concurrent
// use.
type PortReader interface {
	// PortOwners returns the sockets listening on port, each with the pid
	// and program holding it, and the unit of that process where the
	// reader can tell: under systemd any unit (its cgroup), under launchd
	// job's unit for the sockets job's process tree holds. Nothing
	// listening is an empty list; job may be zero.
	PortOwners(ctx context.Context, port int, job Job) ([]Listener, error)
	// UnitListeners returns the sockets listening on any port that job's
	// processes hold, ordered by port. A job with no process has none.
	UnitListeners(ctx context.Context, job Job) ([]PortListener, error)
}

// ProcPorts is the PortReader of a Linux host: PortOwners and
// UnitListeners over Root (/proc; tests point it at fixtures). It reads a
// process's unit from its cgroup, so the job's pid is not needed.
type ProcPorts struct {
	Root string
}

var _ PortReader = ProcPorts{}

func (p ProcPorts) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// PortOwners implements PortReader (PortOwners).
func (p ProcPorts) PortOwners(_ context.Context, port int, _ Job) ([]Listener, error) {
	return PortOwners(p.root(), port)
}

// UnitListeners implements PortReader (UnitListeners).
func (p ProcPorts) UnitListeners(_ context.Context, job Job) ([]PortListener, error) {
	return UnitListeners(p.root(), job.Unit)
}

// ReadPorts is r's PortOwners of port and UnitListeners of job in one
// reading where r can take both at once (LsofPorts runs lsof and ps once,
// not twice), else the two calls.
func ReadPorts(ctx context.Context, r PortReader, port int, job Job) ([]Listener, []PortListener, error) {
	if both, ok := r.(interface {
		readPorts(ctx context.Context, port int, job Job) ([]Listener, []PortListener, error)
	}); ok {
		return both.readPorts(ctx, port, job)
	}
	on, err := r.PortOwners(ctx, port, job)
	if err != nil {
		return nil, nil, err
	}
	own, err := r.UnitListeners(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	return on, own, nil
}
