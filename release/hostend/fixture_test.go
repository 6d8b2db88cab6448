package hostend_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/units"
)

// productEnv makes this test binary behave as the released product: an
// image is this binary with a trailer naming its behaviour, so every
// version has its own digest and /proc/PID/exe names a real image file.
const productEnv = "HOSTEND_TEST_PRODUCT"

func TestMain(m *testing.M) {
	if os.Getenv(productEnv) == "1" {
		os.Exit(runProduct())
	}
	os.Exit(m.Run())
}

// runProduct reads the trailer of its own executable: "exit3" exits 3
// with a line on stderr, anything else runs until killed.
func runProduct() int {
	exe, err := os.Executable()
	if err != nil {
		return 2
	}
	f, err := os.Open(exe)
	if err != nil {
		return 2
	}
	info, err := f.Stat()
	if err != nil {
		return 2
	}
	tail := make([]byte, 200)
	n, _ := f.ReadAt(tail, max(0, info.Size()-200))
	f.Close()
	if bytes.Contains(tail[:n], []byte("#behaviour exit3")) {
		fmt.Fprintln(os.Stderr, "brama: cannot bind 127.0.0.1:8080")
		return 3
	}
	fmt.Println("ready") // the init system's start job completes here
	for {
		time.Sleep(time.Hour)
	}
}

const (
	product = "brama"
	unit    = "brama.service"
	scope   = "system"
	goos    = "linux"
	goarch  = "amd64"
)

// procInit is an init system of one unit that really runs its program
// (the product's current link, as systemd execs it) and keeps the verdict
// systemd would: main pid, last exit, starts.
type procInit struct {
	link     string
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	pid      int
	starts   int
	lastExit int
	restarts int
	logs     []string
	// missing makes the unit one the init system does not hold.
	missing bool
}

func (p *procInit) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

func (p *procInit) Restart(ctx context.Context, scope, unit string) error {
	p.stop()
	cmd := exec.Command(p.link)
	cmd.Env = append(os.Environ(), productEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.restarts++
	p.starts = 1 // an explicit restart resets systemd's count of automatic ones
	if err := cmd.Start(); err != nil {
		p.lastExit, p.cmd = 203, nil
		p.logs = append(p.logs, "failed to execute "+p.link+": "+err.Error())
		p.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	p.cmd, p.done, p.pid = cmd, done, cmd.Process.Pid
	p.mu.Unlock()
	// Like a start job of Type=notify, the restart returns once the program
	// says it is up or has exited, so the tests do not race its start.
	_, _ = bufio.NewReader(stdout).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.lastExit = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.lastExit = ee.ExitCode()
		}
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if l != "" {
				p.logs = append(p.logs, "2026-12-04T03:00:00+00:00 host1 brama["+strconv.Itoa(cmd.Process.Pid)+"]: "+l)
			}
		}
		if p.cmd == cmd {
			p.pid, p.cmd = 0, nil
		}
		close(done)
	}()
	return nil
}

func (p *procInit) Show(ctx context.Context, scope, u string) (units.Verdict, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := units.Verdict{Unit: u, PID: p.pid, LastExit: p.lastExit, Starts: p.starts}
	switch {
	case p.missing:
		v.State, v.Detail = units.StateMissing, "not-found"
	case p.pid > 0:
		v.State, v.Detail = units.StateActive, "active (running)"
	case p.starts > 0 && p.lastExit != 0:
		v.State, v.Detail = units.StateFailing, "activating (auto-restart)"
	default:
		v.State, v.Detail = units.StateInactive, "inactive (dead)"
	}
	return v, nil
}

func (p *procInit) Logs(ctx context.Context, scope, u string, lines int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...), nil
}

func (p *procInit) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// fakeSource is the store: signed manifests by product/version/os/arch and
// chunks by digest. Fetch checks every chunk's digest, as the release core
// does; the whole file is hostend's to check.
type fakeSource struct {
	signed  map[string]release.Signed
	chunks  map[string][]byte
	fetches int
}

func key(p, v, o, a string) string { return p + "/" + v + "/" + o + "-" + a }

func (s *fakeSource) Signed(ctx context.Context, p, v, o, a string) (release.Signed, error) {
	sg, ok := s.signed[key(p, v, o, a)]
	if !ok {
		return release.Signed{}, refusal.New(refusal.NotFound, "no release %s %s for %s/%s", p, v, o, a)
	}
	return sg, nil
}

func (s *fakeSource) Fetch(ctx context.Context, m release.Manifest) ([]byte, string, error) {
	s.fetches++
	var out []byte
	for _, c := range m.Chunks {
		b, ok := s.chunks[c.SHA256]
		if !ok {
			return nil, "", refusal.New(refusal.NotFound, "chunk %s is not stored", c.SHA256)
		}
		if digest(b) != c.SHA256 {
			return nil, "", refusal.New(refusal.ReleaseTampered, "chunk %s does not hold its digest", c.SHA256)
		}
		out = append(out, b...)
	}
	return out, "store", nil
}

// verifySigned is the release core's contract, with real minisign
// signatures: unsigned, untrusted, mismatch.
func verifySigned(s release.Signed, keys []minisign.PublicKey, p, v, o, a string) (release.Manifest, error) {
	if s.Signature == "" {
		return release.Manifest{}, refusal.New(refusal.ReleaseUnsigned, "the manifest of %s %s carries no signature", p, v)
	}
	trusted := false
	for _, k := range keys {
		if minisign.Verify(k, s.Manifest, []byte(s.Signature)) {
			trusted = true
		}
	}
	if !trusted {
		return release.Manifest{}, refusal.New(refusal.ReleaseUntrusted, "no pinned key verifies the manifest of %s %s", p, v)
	}
	var m release.Manifest
	if err := json.Unmarshal(s.Manifest, &m); err != nil {
		return m, refusal.New(refusal.ReleaseUnsigned, "the manifest is not JSON: %v", err)
	}
	if m.Product != p || m.Version != v || m.OS != o || m.Arch != a {
		return m, refusal.New(refusal.ReleaseMismatch, "the manifest names %s %s %s/%s", m.Product, m.Version, m.OS, m.Arch)
	}
	return m, nil
}

// compareVersions orders dot-separated numeric versions.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type fixture struct {
	t      *testing.T
	root   string
	pub    minisign.PublicKey
	priv   minisign.PrivateKey
	base   []byte
	src    *fakeSource
	init   *procInit
	host   *hostend.Host
	serves bool
}

var (
	baseOnce sync.Once
	baseB    []byte
	baseErr  error
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	baseOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			baseErr = err
			return
		}
		baseB, baseErr = os.ReadFile(exe)
	})
	if baseErr != nil {
		t.Fatal(baseErr)
	}
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "release")
	if err := os.MkdirAll(release.KeysDir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: root, pub: pub, priv: priv, base: baseB,
		src:  &fakeSource{signed: map[string]release.Signed{}, chunks: map[string][]byte{}},
		init: &procInit{link: release.CurrentLink(root, product)}, serves: true}
	t.Cleanup(f.init.stop)
	t.Cleanup(func() { makeWritable(root) })
	f.host = &hostend.Host{
		Root: root, GOOS: goos, GOARCH: goarch, Source: f.src,
		Keys:    func() ([]minisign.PublicKey, error) { return []minisign.PublicKey{f.pub}, nil },
		Verify:  verifySigned,
		Compare: compareVersions,
		Init:    f.init,
		Exe:     hostend.ProcExe(""),
		Serving: func(ctx context.Context, scope, unit string, port int, address string) (hostend.ServingReading, error) {
			if f.serves {
				return hostend.ServingReading{Serving: true, Sentence: fmt.Sprintf("%s owns port %d", unit, port)}, nil
			}
			return hostend.ServingReading{Sentence: "nothing listens on port " + strconv.Itoa(port)}, nil
		},
		Poll: 10 * time.Millisecond, Settle: 100 * time.Millisecond,
	}
	return f
}

// makeWritable lets t.TempDir remove the read-only images.
func makeWritable(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// bytesOf is the image of version with a behaviour ("serve", "exit3").
func (f *fixture) bytesOf(version, behaviour string) []byte {
	b := append([]byte(nil), f.base...)
	return append(b, []byte("\n#version "+version+"\n#behaviour "+behaviour+"\n")...)
}

// manifestOf is the manifest of b stored as chunks.
func (f *fixture) manifestOf(version string, b []byte) release.Manifest {
	m := release.Manifest{Kind: release.KindManifest, Product: product, Version: version, OS: goos, Arch: goarch,
		SHA256: digest(b), Size: int64(len(b)), PublishedAt: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	for off := 0; off < len(b); off += 512 << 10 {
		c := b[off:min(len(b), off+512<<10)]
		m.Chunks = append(m.Chunks, release.Chunk{SHA256: digest(c), Size: int64(len(c))})
		f.src.chunks[digest(c)] = append([]byte(nil), c...)
	}
	return m
}

// publishManifest signs m with priv and stores it under version.
func (f *fixture) publishManifest(version string, m release.Manifest, priv minisign.PrivateKey) {
	f.src.signed[key(product, version, goos, goarch)] = f.signedWith(m, priv)
}

// signedManifest is m signed with the pinned key.
func (f *fixture) signedManifest(m release.Manifest) release.Signed { return f.signedWith(m, f.priv) }

func (f *fixture) signedWith(m release.Manifest, priv minisign.PrivateKey) release.Signed {
	mb, err := json.Marshal(m)
	if err != nil {
		f.t.Fatal(err)
	}
	return release.Signed{Kind: release.KindSigned, Manifest: mb, Signature: string(minisign.Sign(priv, mb))}
}

// publish stores and signs version with behaviour, returning its bytes.
func (f *fixture) publish(version, behaviour string) []byte {
	b := f.bytesOf(version, behaviour)
	f.publishManifest(version, f.manifestOf(version, b), f.priv)
	return b
}

func (f *fixture) request(version string) release.ActivateRequest {
	return release.ActivateRequest{Product: product, Version: version, Scope: scope, Unit: unit, Port: 8080, Wait: 10 * time.Second, Mode: "apply"}
}

func (f *fixture) activate(version string) release.ActivateResult {
	f.t.Helper()
	res, err := f.host.Activate(context.Background(), f.request(version))
	if err != nil {
		f.t.Fatalf("activate %s: %v", version, err)
	}
	return res
}

func (f *fixture) state() release.HostState {
	f.t.Helper()
	st, err := release.ReadHostState(f.root)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// treeHash is every path under images/, current/ and state.json with its
// mode, link target and content digest.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	for _, top := range []string{"images", "current", "state.json"} {
		_ = filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				lines = append(lines, p+" "+err.Error())
				return nil
			}
			info, _ := os.Lstat(p)
			line := fmt.Sprintf("%s %v", p, info.Mode())
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				line += " -> " + target
			case info.Mode().IsRegular():
				b, _ := os.ReadFile(p)
				line += " " + digest(b)
			}
			lines = append(lines, line)
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func codeOf(t *testing.T, err error) refusal.Code {
	t.Helper()
	c, ok := refusal.CodeOf(err)
	if !ok {
		t.Fatalf("error %v is not a refusal", err)
	}
	return c
}
