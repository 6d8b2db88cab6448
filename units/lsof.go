package units

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The programs LsofPorts runs, by absolute path (a launchd job's or an ssh
// session's PATH may lack /usr/sbin), and their arguments: every TCP
// socket in LISTEN, numeric addresses and ports, in lsof's field form
// (pid, command, file type, name, TCP state); every process with its
// parent, without a header.
const (
	LsofPath = "/usr/sbin/lsof"
	PsPath   = "/bin/ps"
)

// LsofArgs and PsArgs are the arguments of the two reads.
var (
	LsofArgs = []string{"-nP", "-iTCP", "-sTCP:LISTEN", "-FpctnT"}
	PsArgs   = []string{"-axo", "pid=,ppid="}
)

// LsofPorts is the PortReader of a launchd host. A socket belongs to a job
// when the process holding it is the job's main process (the pid
// `launchctl print` reports, Job.PID) or a descendant of it (ps). lsof run
// by a user other than root sees only that user's processes: a socket of
// another user's process is not listed, and its port reads free.
type LsofPorts struct {
	Runner Runner
	// Lsof and Ps are the executables; empty means LsofPath and PsPath.
	Lsof, Ps string
}

var _ PortReader = LsofPorts{}

// PortOwners implements PortReader (PortOwners).
func (p LsofPorts) PortOwners(ctx context.Context, port int, job Job) ([]Listener, error) {
	on, _, err := p.readPorts(ctx, port, job)
	return on, err
}

// UnitListeners implements PortReader (UnitListeners).
func (p LsofPorts) UnitListeners(ctx context.Context, job Job) ([]PortListener, error) {
	if job.PID <= 0 || job.Unit == "" {
		return nil, nil
	}
	_, own, err := p.readPorts(ctx, 0, job)
	return own, err
}

// readPorts runs lsof once, and ps once when job has a pid and anything
// listens: the listeners on port (none for port 0) and job's own, by port.
func (p LsofPorts) readPorts(ctx context.Context, port int, job Job) ([]Listener, []PortListener, error) {
	all, err := p.listening(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(all) > 0 && job.PID > 0 && job.Unit != "" {
		tree, err := p.tree(ctx, job.PID)
		if err != nil {
			return nil, nil, err
		}
		all = AttributeListeners(all, job.Unit, tree)
	}
	var on []Listener
	var own []PortListener
	for _, l := range all {
		if port > 0 && l.Port == port {
			on = append(on, l.Listener)
		}
		if job.Unit != "" && l.Unit == job.Unit {
			own = append(own, l)
		}
	}
	sort.SliceStable(own, func(i, j int) bool { return own[i].Port < own[j].Port })
	return on, own, nil
}

// listening runs lsof. It exits 1 when it lists nothing (and when it could
// not read some processes): what it printed still counts.
func (p LsofPorts) listening(ctx context.Context) ([]PortListener, error) {
	bin := p.Lsof
	if bin == "" {
		bin = LsofPath
	}
	out, err := p.Runner.Run(ctx, append([]string{bin}, LsofArgs...))
	var ee *ExitError
	if errors.As(err, &ee) && ee.Code == 1 {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("read listening sockets: %w", err)
	}
	return ParseLsof(out)
}

// tree runs ps and returns root and its descendants.
func (p LsofPorts) tree(ctx context.Context, root int) (map[int]bool, error) {
	bin := p.Ps
	if bin == "" {
		bin = PsPath
	}
	out, err := p.Runner.Run(ctx, append([]string{bin}, PsArgs...))
	if err != nil {
		return nil, fmt.Errorf("read the process tree: %w", err)
	}
	parents, err := ParsePsParents(out)
	if err != nil {
		return nil, err
	}
	return Descendants(root, parents), nil
}

// AttributeListeners sets unit on every listener whose pid is in tree
// (Descendants of the job's main process) and returns ls.
func AttributeListeners(ls []PortListener, unit string, tree map[int]bool) []PortListener {
	for i := range ls {
		if tree[ls[i].PID] {
			ls[i].Unit = unit
		}
	}
	return ls
}

// Descendants is root and every process below it in parents (pid to
// parent pid, as ParsePsParents reads it). A root ps does not list (it
// exited meanwhile) is still in the set, alone.
func Descendants(root int, parents map[int]int) map[int]bool {
	children := map[int][]int{}
	for pid, ppid := range parents {
		if pid != ppid {
			children[ppid] = append(children[ppid], pid)
		}
	}
	tree := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !tree[c] {
				tree[c] = true
				queue = append(queue, c)
			}
		}
	}
	return tree
}

// ParsePsParents reads `ps -axo pid=,ppid=` (or any ps output whose first
// two columns are PID and PPID, a header line allowed) into pid → parent
// pid. Lines whose first two words are not numbers are skipped; output
// with no process at all is an error (it is not ps's).
func ParsePsParents(out []byte) (map[int]int, error) {
	parents := map[int]int{}
	for _, line := range splitLines(out) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ppid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || pid < 0 || ppid < 0 {
			continue
		}
		parents[pid] = ppid
	}
	if len(parents) == 0 {
		return nil, fmt.Errorf("read the process tree: no pid and ppid columns in %q", firstLine(out))
	}
	return parents, nil
}

// ParseLsof reads the TCP sockets in LISTEN from lsof output, in either of
// its forms: the field form (-F: lines p<pid>, c<command>, f<fd>,
// t<type>, n<name>, TST=<state>) that LsofPorts runs, or the table people
// read (COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME, "(LISTEN)"
// after the name). A name whose port is not a number (lsof run without
// -P prints service names) or that names a peer ("->") is skipped, as is
// a socket in another state. "*" is the wildcard address: 0.0.0.0 for
// IPv4, [::] for IPv6. Empty output is no sockets.
func ParseLsof(out []byte) ([]PortListener, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if isLsofFieldForm(trimmed) {
		return parseLsofFields(trimmed)
	}
	return parseLsofTable(trimmed)
}

// isLsofFieldForm: field output begins with the process set's p<pid>.
func isLsofFieldForm(out []byte) bool {
	first, _, _ := bytes.Cut(out, []byte("\n"))
	first = bytes.TrimRight(first, "\r")
	if len(first) < 2 || first[0] != 'p' {
		return false
	}
	_, err := strconv.Atoi(string(first[1:]))
	return err == nil
}

func parseLsofFields(out []byte) ([]PortListener, error) {
	var ls []PortListener
	var pid int
	var command string
	type file struct {
		open             bool
		typ, name, state string
	}
	var f file
	flush := func() {
		if f.open && f.name != "" && (f.state == "" || f.state == "LISTEN") {
			if l, ok := lsofListener(f.name, f.typ); ok {
				l.PID, l.Program = pid, command
				ls = append(ls, l)
			}
		}
		f = file{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		v := line[1:]
		switch line[0] {
		case 'p':
			flush()
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("read lsof output: process field %q", line)
			}
			pid, command = n, ""
		case 'c':
			command = v
		case 'f':
			flush()
			f.open = true
		case 't':
			f.typ = v
		case 'n':
			if f.name != "" { // field output without f: each name is a file
				flush()
			}
			f.open, f.name = true, v
		case 'T':
			if s, ok := strings.CutPrefix(v, "ST="); ok {
				f.state = s
			}
		}
	}
	flush()
	return ls, sc.Err()
}

func parseLsofTable(out []byte) ([]PortListener, error) {
	var ls []PortListener
	for _, line := range splitLines(out) {
		fields := strings.Fields(line)
		if len(fields) < 9 || fields[len(fields)-1] != "(LISTEN)" {
			continue
		}
		// COMMAND may hold spaces (+c0): find TYPE and count back to PID.
		ti := -1
		for i, w := range fields {
			if w == "IPv4" || w == "IPv6" {
				ti = i
				break
			}
		}
		if ti < 3 {
			continue
		}
		pid, err := strconv.Atoi(fields[ti-3])
		if err != nil {
			continue
		}
		l, ok := lsofListener(fields[len(fields)-2], fields[ti])
		if !ok {
			continue
		}
		l.PID, l.Program = pid, strings.Join(fields[:ti-3], " ")
		ls = append(ls, l)
	}
	return ls, nil
}

// lsofListener reads a name lsof prints for a listening socket
// ("127.0.0.1:8080", "[::1]:8080", "*:8080") of type IPv4 or IPv6.
func lsofListener(name, typ string) (PortListener, bool) {
	if strings.Contains(name, "->") {
		return PortListener{}, false
	}
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return PortListener{}, false
	}
	host, p := name[:i], name[i+1:]
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return PortListener{}, false
	}
	switch {
	case host == "*" && typ == "IPv6":
		host = "[::]"
	case host == "*":
		host = "0.0.0.0"
	}
	return PortListener{Listener: Listener{Address: host}, Port: int(port)}, true
}
