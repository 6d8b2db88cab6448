package bootstrap

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/units"
)

// fakeRelease is a store that holds one stado build per version, signed by
// one key: LoadSigned, VerifySigned and Fetch as the release core behaves
// for the cases these tests need.
type fakeRelease struct {
	pub     minisign.PublicKey
	builds  map[string][]byte // version -> bytes
	fetches int
}

func newFakeRelease(t *testing.T) (*fakeRelease, Key) {
	t.Helper()
	pub, _, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := pub.MarshalText()
	key, err := KeyFromFile("/keys/publisher.pub", text)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeRelease{pub: pub, builds: map[string][]byte{"1.0.0": []byte("stado 1.0.0 bytes"), "1.1.0": []byte("stado 1.1.0 bytes")}}, key
}

func (f *fakeRelease) source() Source {
	return Source{
		LoadSigned: func(_ context.Context, product, version, goos, goarch string) (release.Signed, error) {
			data, ok := f.builds[version]
			if !ok {
				return release.Signed{}, refusal.New(refusal.NotFound, "no %s %s", product, version)
			}
			sum := sha256.Sum256(data)
			m := release.Manifest{Kind: release.KindManifest, Product: product, Version: version, OS: goos, Arch: goarch,
				SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), Publisher: "ABCD"}
			b, _ := json.Marshal(m)
			return release.Signed{Kind: release.KindSigned, Manifest: b, Signature: "sig"}, nil
		},
		VerifySigned: func(s release.Signed, keys []minisign.PublicKey, product, version, goos, goarch string) (release.Manifest, error) {
			if !slices.ContainsFunc(keys, func(k minisign.PublicKey) bool { return k.Equal(f.pub) }) {
				return release.Manifest{}, refusal.New(refusal.ReleaseUntrusted, "no pinned key verifies %s %s", product, version)
			}
			var m release.Manifest
			err := json.Unmarshal(s.Manifest, &m)
			return m, err
		},
		Fetch: func(_ context.Context, m release.Manifest) ([]byte, error) {
			f.fetches++
			return f.builds[m.Version], nil
		},
	}
}

// sshPub returns a fresh OpenSSH ed25519 public key line.
func sshPub(t *testing.T, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var blob []byte
	for _, part := range [][]byte{[]byte("ssh-ed25519"), pub} {
		blob = binary.BigEndian.AppendUint32(blob, uint32(len(part)))
		blob = append(blob, part...)
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob) + " " + comment
}

func request(key Key) Request {
	return Request{Host: "host3", Version: "1.0.0", Keys: []Key{key}, StoreURL: "file:///var/lib/stado-testbed/store/x",
		Now: func() time.Time { return time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC) }}
}

func outcomes(r Result) map[string]string {
	m := map[string]string{}
	for _, s := range r.Steps {
		m[s.Name] = s.Outcome
	}
	return m
}

func TestBootstrapOfABareHostInstallsStadoAndASecondRunChangesNothing(t *testing.T) {
	h := newFakeHost()
	rel, key := newFakeRelease(t)
	req := request(key)
	req.ChannelKey = sshPub(t, "operator@ws")
	res, err := Run(context.Background(), h, rel.source(), req)
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, h.listing())
	}
	if res.OS != "linux" || res.Arch != "amd64" || !res.Changed {
		t.Errorf("result %+v", res)
	}
	got := outcomes(res)
	for _, name := range Steps() {
		want := OutcomeChanged
		if name == StepAuthorizedKeys {
			want = OutcomePrinted
		}
		if got[name] != want {
			t.Errorf("first run: step %s is %q, want %q", name, got[name], want)
		}
	}
	// the image, read-only, in the release layout
	img := release.ImagePath(Root, res.SHA256, Product)
	if f := h.files[img]; f == nil || string(f.data) != "stado 1.0.0 bytes" || f.mode != "0555" {
		t.Errorf("image %s: %+v", img, f)
	}
	if d := h.files[release.ImageDir(Root, res.SHA256)]; d == nil || d.mode != "0555" {
		t.Errorf("image dir: %+v", d)
	}
	if f := h.files["/var/lib/stado/release/keys/publisher.pub"]; f == nil || string(f.data) != string(key.Text) {
		t.Errorf("pinned key: %+v", f)
	}
	if l := h.files[release.CurrentLink(Root, Product)]; l == nil || l.link != img {
		t.Errorf("current link: %+v", l)
	}
	if l := h.files[ProgramLink]; l == nil || l.link != release.CurrentLink(Root, Product) {
		t.Errorf("%s: %+v", ProgramLink, l)
	}
	if f := h.files["/root/.stado/store-url"]; f == nil || string(f.data) != req.StoreURL+"\n" || f.mode != "0600" {
		t.Errorf("store-url: %+v", f)
	}
	var st release.HostState
	if err := json.Unmarshal(h.files[release.StateFile(Root)].data, &st); err != nil {
		t.Fatal(err)
	}
	if a := st.Products[Product].Active; a == nil || a.Version != "1.0.0" || a.SHA256 != res.SHA256 || a.Path != img {
		t.Errorf("state: active %+v", a)
	}
	// the unit is the catalog's product rendered, running the current link
	unit := string(h.files["/etc/systemd/system/stado.service"].data)
	for _, want := range []string{"ExecStart=/var/lib/stado/release/current/stado host run", "STADO_STORE=" + req.StoreURL, "STADO_HOST=host3"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if !h.enabled["stado.service"] || !h.active["stado.service"] {
		t.Errorf("stado.service enabled %v active %v", h.enabled["stado.service"], h.active["stado.service"])
	}
	if !strings.HasPrefix(res.AuthorizedKey, `command="/usr/local/bin/stado host channel",restrict ssh-ed25519 `) {
		t.Errorf("authorized key line %q", res.AuthorizedKey)
	}
	if _, ok := h.files["/root/.ssh/authorized_keys"]; ok {
		t.Error("authorized_keys written without --forced-command")
	}

	h.calls = nil
	again, err := Run(context.Background(), h, rel.source(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed {
		t.Error("second run reports a change")
	}
	for name, o := range outcomes(again) {
		if o != OutcomeUnchanged && !(name == StepAuthorizedKeys && o == OutcomePrinted) {
			t.Errorf("second run: step %s is %q", name, o)
		}
	}
	if w := h.writes(); len(w) > 0 {
		t.Errorf("second run changed the host: %q", w)
	}
	if h.starts["stado.service"] != 1 {
		t.Errorf("stado.service started %d times, want 1", h.starts["stado.service"])
	}
}

func TestBootstrapUnitIsWhatTheRendererMakesOfTheCatalogProduct(t *testing.T) {
	u, err := renderUnit("host3", "file:///s", "/root")
	if err != nil {
		t.Fatal(err)
	}
	// the same declaration rendered by units directly: the catalog's settings
	// merged, as `stado host unit render` does
	want, err := units.Render(declaration.Service{Name: "stado", Unit: "stado.service", Program: "/var/lib/stado/release/current/stado",
		Args: []string{"host", "run"}, Env: map[string]string{"STADO_STORE": "file:///s", "STADO_HOST": "host3"}, Product: "stado", Scope: "system"},
		declaration.OSLinux, "/root")
	if err != nil {
		t.Fatal(err)
	}
	if string(u.text) != string(want) || u.path != "/etc/systemd/system/stado.service" || u.name != "stado.service" {
		t.Errorf("unit %s at %s:\n%s\nwant:\n%s", u.name, u.path, u.text, want)
	}
}

func TestBootstrapForcedCommandRestrictsTheKeyOnceAndKeepsOtherKeys(t *testing.T) {
	h := newFakeHost()
	rel, key := newFakeRelease(t)
	req := request(key)
	req.ChannelKey = sshPub(t, "operator@ws")
	other := sshPub(t, "someone@else")
	// the same key already there without restriction, and another key
	h.files["/root/.ssh"] = &fakeFile{dir: true, mode: "0700"}
	h.files["/root/.ssh/authorized_keys"] = &fakeFile{data: []byte(other + "\n" + req.ChannelKey + "\n"), mode: "0600"}
	req.ForcedCommand = true
	res, err := Run(context.Background(), h, rel.source(), req)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomes(res)[StepAuthorizedKeys]; o != OutcomeChanged {
		t.Errorf("authorized-keys step %q", o)
	}
	want := other + "\n" + res.AuthorizedKey + "\n"
	f := h.files["/root/.ssh/authorized_keys"]
	if string(f.data) != want || f.mode != "0600" {
		t.Errorf("authorized_keys (%s):\n%s\nwant:\n%s", f.mode, f.data, want)
	}
	again, err := Run(context.Background(), h, rel.source(), req)
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomes(again)[StepAuthorizedKeys]; o != OutcomeUnchanged || again.Changed {
		t.Errorf("second run: authorized-keys %q, changed %v", o, again.Changed)
	}
}

func TestBootstrapRefusesAnImageNoGivenKeyVerifiesAndTouchesNothing(t *testing.T) {
	h := newFakeHost()
	rel, _ := newFakeRelease(t)
	pub, _, _ := minisign.GenerateKey(rand.Reader)
	text, _ := pub.MarshalText()
	stranger, err := KeyFromFile("stranger.pub", text)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), h, rel.source(), request(stranger))
	if code, _ := refusal.CodeOf(err); code != refusal.ReleaseUntrusted {
		t.Fatalf("error %v (code %q), want %s", err, code, refusal.ReleaseUntrusted)
	}
	if w := h.writes(); len(w) > 0 || rel.fetches > 0 {
		t.Errorf("an unverified image changed the host %q or was fetched (%d)", w, rel.fetches)
	}
}

func TestBootstrapReplacesAnImageThatLostItsDigest(t *testing.T) {
	h := newFakeHost()
	rel, key := newFakeRelease(t)
	res, err := Run(context.Background(), h, rel.source(), request(key))
	if err != nil {
		t.Fatal(err)
	}
	img := release.ImagePath(Root, res.SHA256, Product)
	h.files[img].data = []byte("tampered")
	again, err := Run(context.Background(), h, rel.source(), request(key))
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomes(again)[StepImage]; o != OutcomeChanged {
		t.Errorf("image step %q, want changed", o)
	}
	if string(h.files[img].data) != "stado 1.0.0 bytes" {
		t.Errorf("image holds %q", h.files[img].data)
	}
	for p := range h.files {
		if strings.Contains(p, ".bootstrap-") {
			t.Errorf("staging left behind: %s", p)
		}
	}
}

func TestBootstrapToAnotherVersionKeepsTheOldImageAsBackupAndRestarts(t *testing.T) {
	h := newFakeHost()
	rel, key := newFakeRelease(t)
	first, err := Run(context.Background(), h, rel.source(), request(key))
	if err != nil {
		t.Fatal(err)
	}
	req := request(key)
	req.Version = "1.1.0"
	res, err := Run(context.Background(), h, rel.source(), req)
	if err != nil {
		t.Fatal(err)
	}
	var st release.HostState
	if err := json.Unmarshal(h.files[release.StateFile(Root)].data, &st); err != nil {
		t.Fatal(err)
	}
	ps := st.Products[Product]
	if ps.Active == nil || ps.Active.Version != "1.1.0" || ps.Backup == nil || ps.Backup.SHA256 != first.SHA256 {
		t.Errorf("state after upgrade: %+v", ps)
	}
	if h.starts["stado.service"] != 2 {
		t.Errorf("stado.service started %d times, want 2 (a restart onto the new image)", h.starts["stado.service"])
	}
	if o := outcomes(res)[StepProgram]; o != OutcomeUnchanged {
		t.Errorf("%s changed on an upgrade (%q): it names the current link", ProgramLink, o)
	}
}

func TestBootstrapRefusesWhatItCannotBootstrap(t *testing.T) {
	_, key := newFakeRelease(t)
	for _, tc := range []struct {
		name  string
		host  func(*fakeHost)
		req   func(*Request)
		code  refusal.Code
		write bool
	}{
		// launchd hosts are not bootstrapped yet
		{name: "darwin", host: func(h *fakeHost) { h.uname = "Darwin arm64" }, code: refusal.Validation},
		// an architecture stado is not built for
		{name: "riscv", host: func(h *fakeHost) { h.uname = "Linux riscv64" }, code: refusal.Validation},
		// a login that cannot write /var/lib/stado
		{name: "not root", host: func(h *fakeHost) { h.uid = "1000" }, code: refusal.Validation},
		// no key: nothing to verify with, nothing to pin
		{name: "no keys", req: func(r *Request) { r.Keys = nil }, code: refusal.ReleaseNoKeys},
		// a forced command needs the key it restricts
		{name: "forced without key", req: func(r *Request) { r.ForcedCommand = true }, code: refusal.Validation},
		// a channel key that is not an OpenSSH public key line
		{name: "bad channel key", req: func(r *Request) { r.ChannelKey = "ssh-ed25519 notbase64" }, code: refusal.Validation},
		// a version not published
		{name: "unpublished", req: func(r *Request) { r.Version = "9.9.9" }, code: refusal.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			rel, _ := newFakeRelease(t)
			rel.pub, _ = key.publicKey()
			if tc.host != nil {
				tc.host(h)
			}
			req := request(key)
			if tc.req != nil {
				tc.req(&req)
			}
			_, err := Run(context.Background(), h, rel.source(), req)
			if code, _ := refusal.CodeOf(err); code != tc.code {
				t.Fatalf("error %v (code %q), want %s", err, code, tc.code)
			}
			if w := h.writes(); len(w) > 0 {
				t.Errorf("changed the host: %q", w)
			}
		})
	}
}

func TestBootstrapNamesTheFailingStepAndArgv(t *testing.T) {
	h := newFakeHost()
	rel, key := newFakeRelease(t)
	// the program link's directory cannot be made
	_, err := Run(context.Background(), errOnMkdir{h, "/usr/local/bin"}, rel.source(), request(key))
	if err == nil || !strings.Contains(err.Error(), "program: mkdir -p -m 0755 /usr/local/bin") || !errors.Is(err, errExit) {
		t.Fatalf("error %v", err)
	}
}

// errOnMkdir fails the mkdir of one directory.
type errOnMkdir struct {
	*fakeHost
	dir string
}

func (e errOnMkdir) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, []byte, error) {
	if argv[0] == "mkdir" && argv[len(argv)-1] == e.dir {
		e.calls = append(e.calls, argv)
		return nil, []byte("mkdir: not a directory"), errExit
	}
	return e.fakeHost.Run(ctx, argv, stdin)
}

func TestPlatformMapsUnameToGoNames(t *testing.T) {
	for _, tc := range []struct{ in, os, arch string }{
		{"Linux x86_64\n", "linux", "amd64"},
		{"Linux aarch64", "linux", "arm64"},
		{"Darwin arm64", "darwin", "arm64"},
	} {
		os, arch, err := platform(tc.in)
		if err != nil || os != tc.os || arch != tc.arch {
			t.Errorf("platform(%q) = %s %s %v", tc.in, os, arch, err)
		}
	}
	for _, bad := range []string{"", "Linux", "FreeBSD amd64", "Linux i686", "Linux x86_64 extra"} {
		if _, _, err := platform(bad); err == nil {
			t.Errorf("platform(%q) accepted", bad)
		}
	}
}

func TestKeyInLineFindsTheKeyPastOptions(t *testing.T) {
	k, _ := parseSSHKey(sshPub(t, "c"))
	for _, l := range []string{
		k.typ + " " + k.blob,
		`command="/usr/local/bin/stado host channel",restrict ` + k.typ + " " + k.blob + " c",
		`from="10.0.0.1",no-pty ` + k.typ + " " + k.blob,
	} {
		got, ok := keyInLine(l)
		if !ok || !got.same(k) {
			t.Errorf("keyInLine(%q) = %+v %v", l, got, ok)
		}
	}
	if _, ok := keyInLine("# ssh-ed25519 comment only"); ok {
		t.Error("a comment line holds a key")
	}
}

// The operator's key files: each release key read and named by its file,
// the channel key trimmed, and a file that cannot be read refused with
// unreadable naming it before anything else is read.
func TestReadKeysReadsTheOperatorsKeyFiles(t *testing.T) {
	dir := t.TempDir()
	pub, _, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := pub.MarshalText()
	relKey := filepath.Join(dir, "publisher.pub")
	chanKey := filepath.Join(dir, "operator.pub")
	line := sshPub(t, "operator")
	if err := os.WriteFile(relKey, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chanKey, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var req Request
	if err := req.ReadKeys([]string{relKey}, chanKey); err != nil {
		t.Fatal(err)
	}
	if len(req.Keys) != 1 || req.Keys[0].Name != "publisher" || req.ChannelKey != line {
		t.Fatalf("keys %+v, channel key %q", req.Keys, req.ChannelKey)
	}
	missing := filepath.Join(dir, "missing.pub")
	for _, c := range []struct {
		keys    []string
		channel string
	}{
		{[]string{missing}, ""},     // a release key
		{[]string{relKey}, missing}, // the channel key
	} {
		var req Request
		if err := req.ReadKeys(c.keys, c.channel); !refusal.Is(err, refusal.Unreadable) || !strings.Contains(err.Error(), missing) {
			t.Errorf("%v, want unreadable naming %s", err, missing)
		}
	}
}
