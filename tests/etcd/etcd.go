// Package etcdtest starts real etcd members (Debian's etcd-server, etcd
// 3.4) on loopback for tests: one member or a cluster, each a child process
// of the test with its data under t.TempDir(), tracked by pid and ended by
// pid when the test ends.
//
// It speaks to etcd only over plain HTTP (/health) so it adds no etcd client
// module; the store backend speaks etcd's JSON gateway itself. Where etcd
// is not installed a test skips with one line, or fails under
// STADO_TESTBED=required (the testbed package's gate).
package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
)

// Timeouts of a member's life.
const (
	healthyTimeout = 30 * time.Second // start → every member answers /health
	stopTimeout    = 15 * time.Second // SIGTERM → exit, then SIGKILL
)

// Cluster is a set of running etcd members. Its methods are safe for
// concurrent use.
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	members []*member
	token   string
}

type member struct {
	name       string
	dataDir    string
	log        string
	clientPort int
	peerPort   int
	cmd        *exec.Cmd     // nil when not running
	done       chan struct{} // closed when cmd has been waited for
}

// Start starts an etcd cluster of `members` members (1 or 3 are the usual
// sizes; 1..7 allowed) on free 127.0.0.1 ports and returns once every
// member reports healthy. The members are stopped, one at a time, when t
// ends. Without an etcd binary it ends t through testbed.Unavailable.
func Start(t testing.TB, members int) *Cluster {
	t.Helper()
	if testing.Short() {
		testbed.Unavailable(t, "-short is set")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		testbed.Unavailable(t, "etcd is not installed (Debian package etcd-server; run scripts/deps.sh)")
	}
	if members < 1 || members > 7 {
		t.Fatalf("etcdtest: %d members asked, want 1..7", members)
	}
	dir := t.TempDir()
	c := &Cluster{t: t, token: fmt.Sprintf("stado-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	ports, err := freePorts(2 * members)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	for i := 0; i < members; i++ {
		name := "m" + strconv.Itoa(i+1)
		c.members = append(c.members, &member{
			name:       name,
			dataDir:    filepath.Join(dir, name+".data"),
			log:        filepath.Join(dir, name+".log"),
			clientPort: ports[2*i],
			peerPort:   ports[2*i+1],
		})
	}
	t.Cleanup(c.Stop)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if err := c.start(m); err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
	}
	if err := c.waitHealthy(c.members...); err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return c
}

// Endpoints returns every member's client URL (http://127.0.0.1:PORT), in
// member order, running or not.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for i := range c.members {
		eps = append(eps, c.ClientURL(i))
	}
	return eps
}

// ClientURL returns member i's client URL; i counts from 0.
func (c *Cluster) ClientURL(i int) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.members[i].clientPort)
}

// Pid returns member i's pid, or 0 when it is not running.
func (c *Cluster) Pid(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.members[i]; m.cmd != nil {
		return m.cmd.Process.Pid
	}
	return 0
}

// Kill ends member i with SIGKILL, as a crash would, and returns once it is
// gone. Its data stays for Restart.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	m.cmd = nil
}

// Restart starts member i again on its data dir and ports (a member that
// runs is stopped first) and returns once it reports healthy.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	c.stop(m)
	if err := c.start(m); err != nil {
		c.t.Fatalf("etcdtest: restart %s: %v", m.name, err)
	}
	if err := c.waitHealthy(m); err != nil {
		c.t.Fatalf("etcdtest: restart %s: %v", m.name, err)
	}
}

// Stop stops every member, one at a time and last first (all at once makes
// the last leader wait seconds for a leadership transfer that cannot
// happen): SIGTERM by pid, SIGKILL after 15 s. It is idempotent and runs by
// itself when the test ends.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.members) - 1; i >= 0; i-- {
		c.stop(c.members[i])
	}
}

// stop ends m by its pid; called with c.mu held.
func (c *Cluster) stop(m *member) {
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(stopTimeout):
		c.t.Logf("etcdtest: %s (pid %d) still running %v after SIGTERM; SIGKILL", m.name, m.cmd.Process.Pid, stopTimeout)
		m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	}
	m.cmd = nil
}

// start launches m's etcd process; called with c.mu held.
func (c *Cluster) start(m *member) error {
	var cluster []string
	for _, o := range c.members {
		cluster = append(cluster, fmt.Sprintf("%s=http://127.0.0.1:%d", o.name, o.peerPort))
	}
	client := "http://127.0.0.1:" + strconv.Itoa(m.clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(m.peerPort)
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("etcd",
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", strings.Join(cluster, ","),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", c.token,
	)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (a ^C to the test does not reach it first), and
	// SIGKILL if the test process dies without stopping it.
	cmd.SysProcAttr = memberProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	return nil
}

// waitHealthy polls each member's /health until it says true; called with
// c.mu held.
func (c *Cluster) waitHealthy(ms ...*member) error {
	ctx, cancel := context.WithTimeout(context.Background(), healthyTimeout)
	defer cancel()
	for _, m := range ms {
		for {
			err := health(ctx, "http://127.0.0.1:"+strconv.Itoa(m.clientPort))
			if err == nil {
				break
			}
			select {
			case <-m.done:
				return fmt.Errorf("%s exited before it was healthy; log %s:\n%s", m.name, m.log, logTail(m.log))
			case <-ctx.Done():
				return fmt.Errorf("%s not healthy in %v (%v); log %s:\n%s", m.name, healthyTimeout, err, m.log, logTail(m.log))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Healthy asks member i's /health once and returns nil when it answers
// {"health":"true"}.
func (c *Cluster) Healthy(ctx context.Context, i int) error {
	return health(ctx, c.ClientURL(i))
}

func health(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET %s/health: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK || body.Health != "true" {
		return fmt.Errorf("GET %s/health: %s, health %q", url, resp.Status, body.Health)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}
