package bootstrap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
)

// Product is the product a bootstrap installs: stado itself.
const Product = "stado"

// ProgramLink is the path the channel's client names the remote program by
// (sshclient.DefaultRemoteProgram) and the forced command runs; a bootstrap
// makes it a symlink to the current link, so it follows every activation.
const ProgramLink = "/usr/local/bin/stado"

// ChannelCommand is the forced command of a key restricted to the channel
// (docs/channel.md: `stado host channel` serves $SSH_ORIGINAL_COMMAND).
const ChannelCommand = ProgramLink + " host channel"

// Root is where a bootstrap puts the release files: the host's stado runs
// as root, so release.SystemRoot.
const Root = release.SystemRoot

// Outcomes of a step.
const (
	OutcomeUnchanged = "unchanged" // the effect was already on the host
	OutcomeChanged   = "changed"   // the step made it so
	OutcomePrinted   = "printed"   // the authorized_keys line, printed and not installed
	OutcomeSkipped   = "skipped"   // nothing asked of this step (no channel key)
)

// Step names, in the order Run walks them.
const (
	StepImage          = "image"
	StepKeys           = "keys"
	StepState          = "state"
	StepCurrent        = "current"
	StepProgram        = "program"
	StepStoreURL       = "store-url"
	StepUnit           = "unit"
	StepReload         = "daemon-reload"
	StepService        = "service"
	StepAuthorizedKeys = "authorized-keys"
)

// Shell runs one argv on the host: each word reaches the remote program as
// exactly one argument (the SSH end quotes it), stdin (nil for none) is the
// program's standard input. A non-zero exit is an error. It must not be a
// shell string: there is none.
type Shell interface {
	Run(ctx context.Context, argv []string, stdin io.Reader) (stdout, stderr []byte, err error)
}

// Source is where the stado image comes from: its signed manifest, the
// check of the manifest against the keys, and its bytes. StoreSource is the
// store's; tests hand in their own.
type Source struct {
	LoadSigned   func(ctx context.Context, product, version, goos, goarch string) (release.Signed, error)
	VerifySigned func(s release.Signed, keys []minisign.PublicKey, product, version, goos, goarch string) (release.Manifest, error)
	Fetch        func(ctx context.Context, m release.Manifest) ([]byte, error)
}

// StoreSource reads the image from st with package release.
func StoreSource(st store.Store) Source {
	return Source{
		LoadSigned: func(ctx context.Context, product, version, goos, goarch string) (release.Signed, error) {
			return release.LoadSigned(ctx, st, product, version, goos, goarch)
		},
		VerifySigned: release.VerifySigned,
		Fetch: func(ctx context.Context, m release.Manifest) ([]byte, error) {
			return release.Fetch(ctx, st, m)
		},
	}
}

// Key is one release public key to pin: its file name on the host is
// keys/NAME.pub, Text the minisign public key file.
type Key struct {
	Name string
	Text []byte
}

var keyName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// KeyFromFile makes a Key of a public key file's name and content: NAME is
// the file's base name without ".pub". A name outside [A-Za-z0-9_.-] or a
// text that is not a minisign public key is a validation refusal naming the
// file.
func KeyFromFile(file string, text []byte) (Key, error) {
	name := strings.TrimSuffix(path.Base(file), ".pub")
	if !keyName.MatchString(name) {
		return Key{}, refusal.New(refusal.Validation, "release key %s: the name %q must be letters, digits, '_', '.' or '-'", file, name)
	}
	k := Key{Name: name, Text: normalizeText(text)}
	if _, err := k.publicKey(); err != nil {
		return Key{}, refusal.New(refusal.Validation, "release key %s: %v", file, err)
	}
	return k, nil
}

func (k Key) publicKey() (minisign.PublicKey, error) {
	var pk minisign.PublicKey
	err := pk.UnmarshalText(k.Text)
	return pk, err
}

// normalizeText ends text with exactly one newline.
func normalizeText(b []byte) []byte {
	return append(bytes.TrimRight(b, "\r\n\t "), '\n')
}

// Request is one bootstrap of one host.
type Request struct {
	// Host is the registry target name the host's stado runs as (STADO_HOST
	// in its unit).
	Host string
	// Version is the stado version to install.
	Version string
	// Keys are pinned on the host and verify the image; at least one.
	Keys []Key
	// StoreURL is the store the host publishes to: STADO_STORE of the unit
	// and ~/.stado/store-url of the login user.
	StoreURL string
	// ChannelKey is the operator's SSH public key ("ssh-ed25519 AAAA...
	// comment") to restrict to the channel; empty: no authorized_keys line.
	ChannelKey string
	// ForcedCommand installs the line in the login user's
	// ~/.ssh/authorized_keys instead of printing it.
	ForcedCommand bool
	// Now stamps the state file's activation; nil is time.Now.
	Now func() time.Time
}

// ReadKeys reads the key files an operator names into req: each of
// keyFiles as a release public key (KeyFromFile, appended to Keys) and, when
// channelKeyFile is not "", the operator's SSH public key (ChannelKey,
// trimmed). A file that cannot be read is refused with unreadable naming
// it; a release key KeyFromFile refuses, with its refusal.
func (req *Request) ReadKeys(keyFiles []string, channelKeyFile string) error {
	for _, file := range keyFiles {
		text, err := os.ReadFile(file)
		if err != nil {
			return refusal.New(refusal.Unreadable, "release key %s: %v", file, err)
		}
		k, err := KeyFromFile(file, text)
		if err != nil {
			return err
		}
		req.Keys = append(req.Keys, k)
	}
	if channelKeyFile != "" {
		text, err := os.ReadFile(channelKeyFile)
		if err != nil {
			return refusal.New(refusal.Unreadable, "channel key %s: %v", channelKeyFile, err)
		}
		req.ChannelKey = strings.TrimSpace(string(text))
	}
	return nil
}

// Step is what one step found and did.
type Step struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// Result is a bootstrap's report.
type Result struct {
	Host    string `json:"host"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	// Publisher is the id of the key that signed the manifest.
	Publisher string `json:"publisher,omitempty"`
	Steps     []Step `json:"steps"`
	// AuthorizedKey is the line that restricts the channel key.
	AuthorizedKey string `json:"authorized_key,omitempty"`
	// Changed is true when any step changed the host.
	Changed bool `json:"changed"`
}

// Run bootstraps the host sh reaches. It reads the host's OS and
// architecture (`uname -s -m`), refuses a login that is not root, loads and
// verifies the image from src against req.Keys and only then changes the
// host, step by step (the Step constants, in order), each step first reading
// whether its effect is present. A second Run with the same request reports
// every step unchanged (authorized-keys: printed or skipped when nothing is
// installed). Errors: validation refusals for the request, the release
// refusals of src, and the Shell's errors wrapped with the step and argv; the
// Result holds the steps done before the error.
func Run(ctx context.Context, sh Shell, src Source, req Request) (Result, error) {
	res := Result{Host: req.Host, Version: req.Version}
	keys, channelKey, err := checkRequest(req)
	if err != nil {
		return res, err
	}
	b := &boot{sh: sh, ctx: ctx, host: req.Host}
	if res.OS, res.Arch, b.home, err = b.probe(); err != nil {
		return res, err
	}
	signed, err := src.LoadSigned(ctx, Product, req.Version, res.OS, res.Arch)
	if err != nil {
		return res, err
	}
	m, err := src.VerifySigned(signed, keys, Product, req.Version, res.OS, res.Arch)
	if err != nil {
		return res, err
	}
	data, err := src.Fetch(ctx, m)
	if err != nil {
		return res, err
	}
	res.SHA256, res.Publisher = m.SHA256, m.Publisher
	now := req.Now
	if now == nil {
		now = time.Now
	}
	unit, err := renderUnit(req.Host, req.StoreURL, b.home)
	if err != nil {
		return res, err
	}
	image := release.Image{Product: Product, Version: m.Version, SHA256: m.SHA256, Path: release.ImagePath(Root, m.SHA256, Product)}
	if image.Version == "" {
		image.Version = req.Version
	}
	steps := []struct {
		name string
		do   func() (string, string, error)
	}{
		{StepImage, func() (string, string, error) { return b.image(image, data) }},
		{StepKeys, func() (string, string, error) { return b.keys(req.Keys) }},
		{StepState, func() (string, string, error) { return b.state(image, now()) }},
		{StepCurrent, func() (string, string, error) {
			return b.symlink(release.CurrentLink(Root, Product), image.Path)
		}},
		{StepProgram, func() (string, string, error) {
			return b.symlink(ProgramLink, release.CurrentLink(Root, Product))
		}},
		{StepStoreURL, func() (string, string, error) {
			return b.file(path.Join(b.home, ".stado", "store-url"), []byte(req.StoreURL+"\n"), "0600", "0700")
		}},
		{StepUnit, func() (string, string, error) { return b.file(unit.path, unit.text, "0644", "0755") }},
		{StepReload, func() (string, string, error) { return b.reload(unit.name, b.changed[StepUnit]) }},
		{StepService, func() (string, string, error) {
			return b.service(unit.name, b.changed[StepUnit] || b.changed[StepCurrent] || b.changed[StepImage])
		}},
		{StepAuthorizedKeys, func() (string, string, error) {
			if channelKey == nil {
				return OutcomeSkipped, "no channel key given: no authorized_keys line", nil
			}
			res.AuthorizedKey = channelKey.line()
			if !req.ForcedCommand {
				return OutcomePrinted, "add the line to the login user's ~/.ssh/authorized_keys (or pass --forced-command)", nil
			}
			return b.authorizedKeys(*channelKey)
		}},
	}
	b.changed = map[string]bool{}
	for _, s := range steps {
		outcome, detail, err := s.do()
		if err != nil {
			return res, fmt.Errorf("bootstrap %s: %s: %w", req.Host, s.name, err)
		}
		res.Steps = append(res.Steps, Step{Name: s.name, Outcome: outcome, Detail: detail})
		if outcome == OutcomeChanged {
			b.changed[s.name] = true
			res.Changed = true
		}
	}
	return res, nil
}

// checkRequest validates req and parses its keys.
func checkRequest(req Request) ([]minisign.PublicKey, *sshKey, error) {
	if req.Host == "" {
		return nil, nil, refusal.New(refusal.Validation, "bootstrap: no host named")
	}
	if req.Version == "" {
		return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: no stado version named", req.Host)
	}
	if req.StoreURL == "" || strings.ContainsAny(req.StoreURL, "\n\r") {
		return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: the store URL %q is empty or holds a line break", req.Host, req.StoreURL)
	}
	if len(req.Keys) == 0 {
		return nil, nil, refusal.New(refusal.ReleaseNoKeys, "bootstrap %s: no release key to pin and verify the image with", req.Host)
	}
	var keys []minisign.PublicKey
	seen := map[string]bool{}
	for _, k := range req.Keys {
		if !keyName.MatchString(k.Name) || seen[k.Name] {
			return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: release key name %q is invalid or given twice", req.Host, k.Name)
		}
		seen[k.Name] = true
		pk, err := k.publicKey()
		if err != nil {
			return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: release key %s: %v", req.Host, k.Name, err)
		}
		keys = append(keys, pk)
	}
	if req.ChannelKey == "" {
		if req.ForcedCommand {
			return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: a forced command needs the channel key it restricts", req.Host)
		}
		return keys, nil, nil
	}
	ck, err := parseSSHKey(strings.TrimSpace(req.ChannelKey))
	if err != nil {
		return nil, nil, refusal.New(refusal.Validation, "bootstrap %s: channel key: %v", req.Host, err)
	}
	return keys, &ck, nil
}

// boot is one run's connection to the host and what it learned.
type boot struct {
	ctx     context.Context
	sh      Shell
	host    string
	home    string
	changed map[string]bool
}

// run runs argv and returns its stdout; a failure names argv.
func (b *boot) run(stdin io.Reader, argv ...string) (string, error) {
	out, errOut, err := b.sh.Run(b.ctx, argv, stdin)
	if err != nil {
		msg := strings.TrimSpace(string(errOut))
		if msg != "" {
			return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, msg)
		}
		return string(out), fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return string(out), nil
}

// probe reads the host's OS and architecture (Go's names), checks the login
// is root and reads its home.
func (b *boot) probe() (goos, goarch, home string, err error) {
	out, err := b.run(nil, "uname", "-s", "-m")
	if err != nil {
		return "", "", "", err
	}
	goos, goarch, err = platform(out)
	if err != nil {
		return "", "", "", refusal.New(refusal.Validation, "bootstrap %s: %v", b.host, err)
	}
	if goos != declaration.OSLinux {
		return "", "", "", refusal.New(refusal.Validation, "bootstrap %s: a %s host: only systemd hosts (linux) are bootstrapped so far", b.host, goos)
	}
	out, err = b.run(nil, "id", "-u")
	if err != nil {
		return "", "", "", err
	}
	if uid := strings.TrimSpace(out); uid != "0" {
		return "", "", "", refusal.New(refusal.Validation, "bootstrap %s: the login user has uid %s; bootstrap writes /var/lib/stado and /etc/systemd/system and must log in as root", b.host, uid)
	}
	out, err = b.run(nil, "printenv", "HOME")
	if err != nil {
		return "", "", "", err
	}
	home = strings.TrimSpace(out)
	if !path.IsAbs(home) || path.Clean(home) != home || home == "/" || strings.ContainsAny(home, "\n'") {
		return "", "", "", refusal.New(refusal.Validation, "bootstrap %s: the login user's HOME %q is not a clean absolute path", b.host, home)
	}
	return goos, goarch, home, nil
}

// platform maps `uname -s -m` to Go's GOOS and GOARCH.
func platform(uname string) (string, string, error) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", "", fmt.Errorf("uname -s -m printed %q, want two words", strings.TrimSpace(uname))
	}
	var goos, goarch string
	switch f[0] {
	case "Linux":
		goos = declaration.OSLinux
	case "Darwin":
		goos = declaration.OSDarwin
	default:
		return "", "", fmt.Errorf("operating system %q is neither Linux nor Darwin", f[0])
	}
	switch f[1] {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	default:
		return "", "", fmt.Errorf("architecture %q is not one stado is built for (x86_64, aarch64)", f[1])
	}
	return goos, goarch, nil
}

// tmpName is a fresh name beside target for a write renamed into place.
func tmpName(target string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return path.Join(path.Dir(target), "."+path.Base(target)+".bootstrap-"+hex.EncodeToString(r[:]))
}

// digest reads sha256sum of file; "" when it cannot be read.
func (b *boot) digest(file string) string {
	out, err := b.run(nil, "sha256sum", "--", file)
	if err != nil {
		return ""
	}
	if f := strings.Fields(out); len(f) > 0 {
		return f[0]
	}
	return ""
}

// image installs the image unless the host holds a file with its digest at
// its path: uploaded to a staging directory with dd, checked, made read-only
// (file and directory 0555) and renamed into images/<sha>.
func (b *boot) image(img release.Image, data []byte) (string, string, error) {
	if b.digest(img.Path) == img.SHA256 {
		return OutcomeUnchanged, img.Path, nil
	}
	dir := release.ImageDir(Root, img.SHA256)
	stage := tmpName(dir)
	staged := path.Join(stage, Product)
	steps := [][]string{
		{"mkdir", "-p", "-m", "0755", release.ImagesDir(Root)},
		{"mkdir", "-m", "0755", stage},
	}
	for _, argv := range steps {
		if _, err := b.run(nil, argv...); err != nil {
			return "", "", err
		}
	}
	fail := func(err error) (string, string, error) {
		_, _ = b.run(nil, "rm", "-rf", "--", stage)
		return "", "", err
	}
	if _, err := b.run(bytes.NewReader(data), "dd", "of="+staged, "bs=1M", "status=none"); err != nil {
		return fail(err)
	}
	if got := b.digest(staged); got != img.SHA256 {
		return fail(refusal.New(refusal.ReleaseDigest, "bootstrap %s: the uploaded image %s has digest %q, want %s", b.host, staged, got, img.SHA256))
	}
	for _, argv := range [][]string{
		{"chmod", "0555", staged},
		{"chmod", "0555", stage},
		{"rm", "-rf", "--", dir}, // an image directory that lost its digest
		{"mv", "-T", "--", stage, dir},
	} {
		if _, err := b.run(nil, argv...); err != nil {
			return fail(err)
		}
	}
	return OutcomeChanged, fmt.Sprintf("uploaded %d bytes to %s", len(data), img.Path), nil
}

// readFile reads a file of the host; ok is false when it is not a regular
// file there.
func (b *boot) readFile(file string) (data []byte, ok bool, err error) {
	if _, err := b.run(nil, "test", "-f", file); err != nil {
		return nil, false, nil
	}
	out, err := b.run(nil, "cat", "--", file)
	if err != nil {
		return nil, false, err
	}
	return []byte(out), true, nil
}

// writeFile replaces file with data and mode atomically: its directory made
// with dirMode when missing, data written with dd to a temporary name beside
// it, chmod, renamed over it.
func (b *boot) writeFile(file string, data []byte, mode, dirMode string) error {
	tmp := tmpName(file)
	if _, err := b.run(nil, "mkdir", "-p", "-m", dirMode, path.Dir(file)); err != nil {
		return err
	}
	if _, err := b.run(bytes.NewReader(data), "dd", "of="+tmp, "status=none"); err != nil {
		_, _ = b.run(nil, "rm", "-f", "--", tmp)
		return err
	}
	for _, argv := range [][]string{{"chmod", mode, tmp}, {"mv", "-f", "-T", "--", tmp, file}} {
		if _, err := b.run(nil, argv...); err != nil {
			_, _ = b.run(nil, "rm", "-f", "--", tmp)
			return err
		}
	}
	return nil
}

// file makes file hold exactly data.
func (b *boot) file(file string, data []byte, mode, dirMode string) (string, string, error) {
	got, ok, err := b.readFile(file)
	if err != nil {
		return "", "", err
	}
	if ok && bytes.Equal(got, data) {
		return OutcomeUnchanged, file, nil
	}
	if err := b.writeFile(file, data, mode, dirMode); err != nil {
		return "", "", err
	}
	return OutcomeChanged, "wrote " + file, nil
}

// keys pins every key as keys/NAME.pub; keys pinned before and not named
// stay.
func (b *boot) keys(keys []Key) (string, string, error) {
	var wrote []string
	for _, k := range keys {
		file := path.Join(release.KeysDir(Root), k.Name+".pub")
		outcome, _, err := b.file(file, k.Text, "0644", "0755")
		if err != nil {
			return "", "", err
		}
		if outcome == OutcomeChanged {
			wrote = append(wrote, k.Name)
		}
	}
	if len(wrote) == 0 {
		return OutcomeUnchanged, release.KeysDir(Root), nil
	}
	return OutcomeChanged, "pinned " + strings.Join(wrote, ", ") + " in " + release.KeysDir(Root), nil
}

// state makes img the active stado image of the host's state file; an
// active image it replaces becomes the backup. A state file that is not a
// state document is refused, never overwritten.
func (b *boot) state(img release.Image, now time.Time) (string, string, error) {
	file := release.StateFile(Root)
	st := release.HostState{Kind: release.KindState, Products: map[string]release.ProductState{}}
	got, ok, err := b.readFile(file)
	if err != nil {
		return "", "", err
	}
	if ok {
		if err := json.Unmarshal(got, &st); err != nil || st.Kind != release.KindState {
			return "", "", refusal.New(refusal.Unreadable, "bootstrap %s: release state %s is not a release state document", b.host, file)
		}
		if st.Products == nil {
			st.Products = map[string]release.ProductState{}
		}
	}
	ps := st.Products[Product]
	if ps.Active != nil && *ps.Active == img {
		return OutcomeUnchanged, file, nil
	}
	if ps.Active != nil && ps.Active.SHA256 != img.SHA256 {
		prev := *ps.Active
		ps.Backup = &prev
	}
	active := img
	ps.Active = &active
	ps.Last = &release.Activation{Product: Product, Version: img.Version, SHA256: img.SHA256, At: now.UTC(), Outcome: release.OutcomeInstalled}
	st.Products[Product] = ps
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := b.writeFile(file, append(data, '\n'), "0644", "0755"); err != nil {
		return "", "", err
	}
	return OutcomeChanged, fmt.Sprintf("%s active in %s", img.Version, file), nil
}

// symlink makes link a symlink to target, replacing whatever is there by a
// rename.
func (b *boot) symlink(link, target string) (string, string, error) {
	if out, err := b.run(nil, "readlink", "--", link); err == nil && strings.TrimRight(out, "\n") == target {
		return OutcomeUnchanged, link + " -> " + target, nil
	}
	tmp := tmpName(link)
	for _, argv := range [][]string{
		{"mkdir", "-p", "-m", "0755", path.Dir(link)},
		{"ln", "-s", "--", target, tmp},
		{"mv", "-f", "-T", "--", tmp, link},
	} {
		if _, err := b.run(nil, argv...); err != nil {
			_, _ = b.run(nil, "rm", "-f", "--", tmp)
			return "", "", err
		}
	}
	return OutcomeChanged, link + " -> " + target, nil
}

// stadoUnit is the rendered unit of the catalog's stado product.
type stadoUnit struct {
	name, path string
	text       []byte
}

// renderUnit renders the catalog's stado product as `stado host unit
// render` would a declaration of it: the program is the current link, the
// store and the host name in its environment.
func renderUnit(host, storeURL, home string) (stadoUnit, error) {
	p, ok := catalog.Shipped().Lookup(Product)
	if !ok {
		return stadoUnit{}, refusal.New(refusal.NotFound, "bootstrap %s: the shipped catalog has no %s product", host, Product)
	}
	s := p.Declaration(declaration.OSLinux, declaration.ScopeSystem)
	s.Program = release.CurrentLink(Root, Product)
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	s.Env["STADO_STORE"] = storeURL
	s.Env["STADO_HOST"] = host
	text, err := units.Render(s, declaration.OSLinux, home)
	if err != nil {
		return stadoUnit{}, fmt.Errorf("render %s: %w", s.Unit, err)
	}
	return stadoUnit{name: s.Unit, path: units.UnitPath(s, declaration.OSLinux, home), text: text}, nil
}

// reload runs daemon-reload when the unit file changed or systemd says it
// needs one or has not loaded the unit.
func (b *boot) reload(unit string, unitChanged bool) (string, string, error) {
	out, err := b.run(nil, "systemctl", "show", "-p", "LoadState", "-p", "NeedDaemonReload", "--", unit)
	if err != nil {
		return "", "", err
	}
	props := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			props[k] = v
		}
	}
	if !unitChanged && props["LoadState"] == "loaded" && props["NeedDaemonReload"] == "no" {
		return OutcomeUnchanged, unit + " loaded", nil
	}
	if _, err := b.run(nil, "systemctl", "daemon-reload"); err != nil {
		return "", "", err
	}
	return OutcomeChanged, "systemctl daemon-reload", nil
}

// service enables and starts the unit, and restarts it when it was active
// on what this run replaced (its unit file or its image).
func (b *boot) service(unit string, replaced bool) (string, string, error) {
	enabled, _ := b.run(nil, "systemctl", "is-enabled", "--", unit)
	active, _ := b.run(nil, "systemctl", "is-active", "--", unit)
	isEnabled := strings.TrimSpace(enabled) == "enabled"
	isActive := strings.TrimSpace(active) == "active"
	var did []string
	if !isEnabled {
		if _, err := b.run(nil, "systemctl", "enable", "--", unit); err != nil {
			return "", "", err
		}
		did = append(did, "enabled")
	}
	switch {
	case !isActive:
		if _, err := b.run(nil, "systemctl", "start", "--", unit); err != nil {
			return "", "", err
		}
		did = append(did, "started")
	case replaced:
		if _, err := b.run(nil, "systemctl", "restart", "--", unit); err != nil {
			return "", "", err
		}
		did = append(did, "restarted")
	}
	if len(did) == 0 {
		return OutcomeUnchanged, unit + " enabled and active", nil
	}
	return OutcomeChanged, unit + " " + strings.Join(did, ", "), nil
}

// authorizedKeys makes the login user's authorized_keys hold the channel
// key exactly once, restricted: any other line for the same key (one
// without the forced command would let it run anything) is replaced.
func (b *boot) authorizedKeys(k sshKey) (string, string, error) {
	file := path.Join(b.home, ".ssh", "authorized_keys")
	got, _, err := b.readFile(file)
	if err != nil {
		return "", "", err
	}
	want := k.line()
	var lines []string
	kept := false
	for _, l := range strings.Split(strings.TrimRight(string(got), "\n"), "\n") {
		if l == "" && len(got) == 0 {
			continue
		}
		if other, ok := keyInLine(l); ok && other.same(k) {
			if l == want && !kept {
				kept = true
				lines = append(lines, l)
			}
			continue
		}
		lines = append(lines, l)
	}
	if !kept {
		lines = append(lines, want)
	}
	next := []byte(strings.Join(lines, "\n") + "\n")
	if bytes.Equal(next, got) {
		return OutcomeUnchanged, file, nil
	}
	if err := b.writeFile(file, next, "0600", "0700"); err != nil {
		return "", "", err
	}
	return OutcomeChanged, "restricted the key in " + file, nil
}

// sshKey is an OpenSSH public key: type, base64 blob and comment.
type sshKey struct {
	typ, blob, comment string
}

func (k sshKey) same(o sshKey) bool { return k.typ == o.typ && k.blob == o.blob }

// line is the authorized_keys line restricting k to the channel.
func (k sshKey) line() string {
	l := `command="` + ChannelCommand + `",restrict ` + k.typ + " " + k.blob
	if k.comment != "" {
		l += " " + k.comment
	}
	return l
}

// parseSSHKey reads "TYPE BASE64 [COMMENT]": BASE64 must decode to a key
// blob of TYPE (the wire format starts with the type's name).
func parseSSHKey(s string) (sshKey, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return sshKey{}, fmt.Errorf("%q is not an OpenSSH public key line (TYPE BASE64 [COMMENT])", s)
	}
	if !blobOf(f[0], f[1]) {
		return sshKey{}, fmt.Errorf("%q is not a %s public key", f[1], f[0])
	}
	comment := strings.Join(f[2:], " ")
	if strings.ContainsAny(comment, "\"\\") {
		return sshKey{}, fmt.Errorf("the key's comment %q holds a quote or backslash", comment)
	}
	return sshKey{typ: f[0], blob: f[1], comment: comment}, nil
}

// keyInLine finds the key of an authorized_keys line, past any options: the
// first word followed by a blob of that key type.
func keyInLine(l string) (sshKey, bool) {
	f := strings.Fields(l)
	for i := 0; i+1 < len(f); i++ {
		if blobOf(f[i], f[i+1]) {
			return sshKey{typ: f[i], blob: f[i+1]}, true
		}
	}
	return sshKey{}, false
}

// blobOf reports whether b64 decodes to an SSH key blob of type typ.
func blobOf(typ, b64 string) bool {
	if typ == "" || strings.HasPrefix(typ, "#") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) < 4 {
		return false
	}
	n := binary.BigEndian.Uint32(raw[:4])
	return int(n) == len(typ) && len(raw) >= 4+len(typ) && string(raw[4:4+len(typ)]) == typ
}

// Steps lists the step names in the order Run walks them.
func Steps() []string {
	return slices.Clone([]string{StepImage, StepKeys, StepState, StepCurrent, StepProgram, StepStoreURL, StepUnit, StepReload, StepService, StepAuthorizedKeys})
}
