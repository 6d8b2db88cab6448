package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/safefile"
)

// Host is one simulated host of the bed.
type Host struct {
	// Name is the host's hostname and its ssh_config alias: "host1", "host2", ...
	Name string
	// Addr is the host's own loopback address, 127.0.1.Index; its sshd
	// listens on Addr:22 and services under test bind Addr, never 0.0.0.0.
	Addr string
	// Index is K in hostK, from 1.
	Index int
}

// Bed is a running testbed. Its methods are safe for concurrent use; they
// act on the hosts, never on the machine, except where a comment says so.
type Bed struct {
	dir    string // state dir of testbed.sh
	store  string // shared store dir, same path everywhere
	script string // testbed.sh
	hosts  []Host
}

// hostPath is PATH inside a host for Exec.
const hostPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Hosts returns the bed's hosts in order, host1 first.
func (b *Bed) Hosts() []Host { return append([]Host(nil), b.hosts...) }

// Host returns hostK; it panics when K is not a host of the bed, which is a
// bug in the test.
func (b *Bed) Host(k int) Host {
	if k < 1 || k > len(b.hosts) {
		panic(fmt.Sprintf("testbed: host%d asked of a bed with %d hosts", k, len(b.hosts)))
	}
	return b.hosts[k-1]
}

// Dir is the state directory of testbed.sh (keys, ssh_config, per-host files).
func (b *Bed) Dir() string { return b.dir }

// SSHConfig is the ssh_config file that maps hostK to 127.0.1.K with the
// bed's key, its known_hosts and strict host-key checking.
func (b *Bed) SSHConfig() string { return filepath.Join(b.dir, "ssh_config") }

// KnownHosts is the known_hosts file with every host's key, under both its
// name and its address.
func (b *Bed) KnownHosts() string { return filepath.Join(b.dir, "known_hosts") }

// KeyPath is the private key root logs in with on every host.
func (b *Bed) KeyPath() string { return filepath.Join(b.dir, "id_ed25519") }

// StoreDir is the shared store directory: the same path names the same
// files on the machine and inside every host. `up` empties it.
func (b *Bed) StoreDir() string { return b.store }

// BinDir holds the programs under test; InstallStado and InstallBin place
// each in every host's own /usr/local/bin (HostBinDir). A file written here
// reaches no host until InstallBin installs it.
func (b *Bed) BinDir() string { return filepath.Join(b.dir, "bin") }

// HostBinDir is the machine's path of h's own /usr/local/bin.
func (b *Bed) HostBinDir(h Host) string { return filepath.Join(b.hostDir(h), "fs", "usr-local-bin") }

// HostStadoDir is the machine's path of h's own /var/lib/stado (where a
// host keeps its release images and state).
func (b *Bed) HostStadoDir(h Host) string { return filepath.Join(b.hostDir(h), "fs", "var-lib-stado") }

// hostDir is testbed.sh's per-host directory.
func (b *Bed) hostDir(h Host) string { return filepath.Join(b.dir, "hosts", h.Name) }

// SSHCommand returns the system ssh client set up to run argv on h as root
// through the bed's ssh_config. Each argument is quoted for the remote POSIX
// shell, so it arrives as exactly one argument. Stdin is empty unless the
// caller sets it.
func (b *Bed) SSHCommand(ctx context.Context, h Host, argv ...string) (*exec.Cmd, error) {
	remote, err := remoteCommand(argv)
	if err != nil {
		return nil, fmt.Errorf("ssh %s %q: %w", h.Name, argv, err)
	}
	cmd := exec.CommandContext(ctx, "ssh", "-F", b.SSHConfig(), "-o", "BatchMode=yes", "--", h.Name, remote)
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// SSH runs argv on h over the bed's real OpenSSH server and returns what it
// printed. A non-zero remote exit is an *exec.ExitError wrapped with the
// host, the argv and the end of stderr; the exit status is the remote one
// (255 for a connection failure).
func (b *Bed) SSH(ctx context.Context, h Host, argv ...string) (stdout, stderr string, err error) {
	cmd, err := b.SSHCommand(ctx, h, argv...)
	if err != nil {
		return "", "", err
	}
	return run(cmd, "ssh "+h.Name, argv)
}

// ExecCommand returns a command that runs argv inside h directly (nsenter
// into its mount, UTS, IPC, PID and cgroup namespaces; no ssh, no shell),
// with a minimal root environment. The process sits outside the host's
// systemd cgroup tree; use SSH where that matters.
func (b *Bed) ExecCommand(ctx context.Context, h Host, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("exec %s: empty argv", h.Name)
	}
	pid, err := b.initPid(h)
	if err != nil {
		return nil, err
	}
	args := []string{"-t", strconv.Itoa(pid), "-m", "-u", "-i", "-p", "-C", "--",
		"env", "-i", "PATH=" + hostPath, "HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8"}
	cmd := exec.CommandContext(ctx, "nsenter", append(args, argv...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// Exec runs argv inside h (see ExecCommand) and returns what it printed. A
// non-zero exit is an *exec.ExitError wrapped with the host and argv.
func (b *Bed) Exec(ctx context.Context, h Host, argv ...string) (stdout, stderr string, err error) {
	cmd, err := b.ExecCommand(ctx, h, argv...)
	if err != nil {
		return "", "", err
	}
	return run(cmd, "exec "+h.Name, argv)
}

// run runs cmd and wraps a failure with what was run and the end of stderr.
func run(cmd *exec.Cmd, what string, argv []string) (string, string, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %q: %w; stderr: %s", what, argv, err, tail(errb.String(), 5))
	}
	return out.String(), errb.String(), err
}

// tail returns the last n lines of s, trimmed.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// hostRoot returns /proc/<PID 1 of h>/root: h's filesystem as h sees it.
func (b *Bed) hostRoot(h Host) (string, error) {
	pid, err := b.initPid(h)
	if err != nil {
		return "", err
	}
	return "/proc/" + strconv.Itoa(pid) + "/root", nil
}

// hostFile maps an absolute path inside h to the machine's path for it.
func (b *Bed) hostFile(h Host, path string) (string, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
		return "", fmt.Errorf("%s: path %q: must be absolute and clean", h.Name, path)
	}
	root, err := b.hostRoot(h)
	if err != nil {
		return "", err
	}
	return root + path, nil
}

// WriteFile replaces path inside h (as h sees its filesystem, so
// /etc/systemd/system is h's own) with data and mode, atomically: temp file
// in the same directory, fsync, rename, fsync of the directory. The
// directory must exist. Symlinks along path are resolved from the machine's
// root, which is the same as the host's except for /etc/systemd, /etc/ssh,
// /root, /tmp, /var/tmp, /run, /usr/local/bin and /var/lib/stado.
func (b *Bed) WriteFile(h Host, path string, data []byte, mode os.FileMode) error {
	p, err := b.hostFile(h, path)
	if err != nil {
		return err
	}
	if err := safefile.Write(p, data, mode); err != nil {
		return fmt.Errorf("write %s:%s: %w", h.Name, path, err)
	}
	return nil
}

// ReadFile reads path inside h, as h sees it.
func (b *Bed) ReadFile(h Host, path string) ([]byte, error) {
	p, err := b.hostFile(h, path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s:%s: %w", h.Name, path, err)
	}
	return data, nil
}

// StopSSHD stops h's OpenSSH server through h's systemd (sessions already
// open stay up); ssh to h then fails to connect.
func (b *Bed) StopSSHD(ctx context.Context, h Host) error {
	_, _, err := b.Exec(ctx, h, "systemctl", "stop", "ssh.service")
	return err
}

// StartSSHD starts h's OpenSSH server again and returns once it accepts
// logins.
func (b *Bed) StartSSHD(ctx context.Context, h Host) error {
	if _, _, err := b.Exec(ctx, h, "systemctl", "start", "ssh.service"); err != nil {
		return err
	}
	return b.waitSSH(ctx, h)
}

// Reboot reboots h (its systemd stops its units and the launcher boots a new
// PID 1 with the same files; /tmp and /run start empty) and returns once h is
// running again and accepts ssh.
func (b *Bed) Reboot(ctx context.Context, h Host) error {
	old, err := b.initProc(h)
	if err != nil {
		return err
	}
	// systemctl complains that logind is masked, yet reboots and exits 0.
	if _, _, err := b.Exec(ctx, h, "systemctl", "reboot"); err != nil {
		return err
	}
	for {
		p, err := b.initProc(h)
		if err == nil && p != old {
			break
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("reboot %s: no new PID 1: %w", h.Name, err)
		}
	}
	for {
		out, _, _ := b.Exec(ctx, h, "systemctl", "is-system-running", "--wait")
		if s := strings.TrimSpace(out); s == "running" || s == "degraded" {
			break
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("reboot %s: not running again: %w", h.Name, err)
		}
	}
	return b.waitSSH(ctx, h)
}

// waitSSH polls until `ssh h true` succeeds or ctx ends.
func (b *Bed) waitSSH(ctx context.Context, h Host) error {
	for {
		_, _, err := b.SSH(ctx, h, "true")
		if err == nil {
			return nil
		}
		if werr := sleepCtx(ctx, 200*time.Millisecond); werr != nil {
			return fmt.Errorf("%s: ssh not accepting logins: %w (last: %v)", h.Name, werr, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Proc is a process the testbed started, as testbed.sh recorded it: a pid
// and the start time that tells it apart from a later process with the same
// pid.
type Proc struct {
	Host  string
	Role  string // "launcher", "unshare" or "init" (the host's PID 1)
	Pid   int
	Start string // field 22 of /proc/PID/stat
}

// Alive reports whether that very process still runs (a zombie counts as
// gone).
func (p Proc) Alive() bool { return procStart(p.Pid) == p.Start && p.Start != "" }

// Processes returns the processes testbed.sh recorded for the bed's hosts
// and that still run.
func (b *Bed) Processes() []Proc {
	var ps []Proc
	for _, h := range b.hosts {
		for _, role := range []string{"launcher", "unshare", "init"} {
			p, err := readProc(b.hostDir(h), role)
			if err == nil && p.Alive() {
				p.Host = h.Name
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// CgroupDir is the cgroup2 directory that holds every host's processes.
func CgroupDir() string {
	base := cgroup2Base()
	if base == "" {
		return ""
	}
	return filepath.Join(base, cgroupName)
}

// initProc returns h's recorded PID 1, checked to be still the same process.
func (b *Bed) initProc(h Host) (Proc, error) {
	p, err := readProc(b.hostDir(h), "init")
	if err != nil || !p.Alive() {
		return Proc{}, fmt.Errorf("%s is not running", h.Name)
	}
	return p, nil
}

func (b *Bed) initPid(h Host) (int, error) {
	p, err := b.initProc(h)
	return p.Pid, err
}

// readProc reads ROLE.pid and ROLE.start from a host dir.
func readProc(dir, role string) (Proc, error) {
	pb, err := os.ReadFile(filepath.Join(dir, role+".pid"))
	if err != nil {
		return Proc{}, err
	}
	sb, err := os.ReadFile(filepath.Join(dir, role+".start"))
	if err != nil {
		return Proc{}, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pb)))
	if err != nil || pid <= 1 {
		return Proc{}, errors.New("bad pid file")
	}
	return Proc{Role: role, Pid: pid, Start: strings.TrimSpace(string(sb))}, nil
}

// procStart returns field 22 (start time) of /proc/PID/stat, or "" when the
// process is gone or a zombie.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}
