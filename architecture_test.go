// The structure of the module, held against docs/architecture.md: the
// table of arrows there is the one the code has, the named rules hold,
// and every package's doc comment names the stado packages it imports.
package stado_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/wisent/stado/"

// pkg is one package of the module as its production files make it.
type pkg struct {
	path    string          // relative to the module root: "channel/local"
	imports map[string]bool // stado packages it imports, relative paths
	ext     map[string]bool // other packages it imports (standard library too)
	doc     string          // its package doc comment(s)
}

// readPackages parses every production Go file of the module (test files,
// testdata and the journeys with their harness and fixtures left out) for
// imports and docs.
func readPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// tests/ holds the journeys and their harness, not the product
			if name := d.Name(); name == "testdata" || (strings.HasPrefix(name, ".") && p != ".") || name == "bin" || p == "tests" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		k := pkgs[dir]
		if k == nil {
			k = &pkg{path: dir, imports: map[string]bool{}, ext: map[string]bool{}}
			pkgs[dir] = k
		}
		if f.Doc != nil {
			k.doc += f.Doc.Text()
		}
		for _, im := range f.Imports {
			if v := strings.Trim(im.Path.Value, `"`); strings.HasPrefix(v, module) {
				k.imports[strings.TrimPrefix(v, module)] = true
			} else {
				k.ext[v] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// documentedArrows reads the arrows table of docs/architecture.md: rows
// "| `pkg` | `a`, `b` |" between the markers <!-- arrows --> and
// <!-- /arrows -->; "—" for none.
func documentedArrows(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- arrows -->":
			in = true
			continue
		case line == "<!-- /arrows -->":
			in = false
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var to []string
		for _, c := range strings.Split(cells[1], ",") {
			if c = strings.Trim(strings.TrimSpace(c), "`"); c != "" && c != "—" {
				to = append(to, c)
			}
		}
		sort.Strings(to)
		out[name] = to
	}
	if len(out) == 0 {
		t.Fatal("docs/architecture.md has no arrows table between <!-- arrows --> markers")
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The drawing in docs/architecture.md is the code's: every package is in
// it, with exactly the stado packages it imports.
func TestTheArchitectureDocumentDrawsTheImportsAsTheyAre(t *testing.T) {
	pkgs := readPackages(t)
	doc := documentedArrows(t)
	for dir, p := range pkgs {
		want, ok := doc[dir]
		if !ok {
			t.Errorf("%s: not in docs/architecture.md (imports %s)", dir, strings.Join(sortedKeys(p.imports), ", "))
			continue
		}
		if got := sortedKeys(p.imports); !slices.Equal(got, want) {
			t.Errorf("%s: imports %v; docs/architecture.md draws %v", dir, got, want)
		}
	}
	for dir := range doc {
		if pkgs[dir] == nil {
			t.Errorf("docs/architecture.md draws %s, which has no production code", dir)
		}
	}
}

// deps is every stado package p reaches through imports.
func deps(pkgs map[string]*pkg, p string) map[string]bool {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(q string) {
		k := pkgs[q]
		if k == nil {
			return
		}
		for im := range k.imports {
			if !seen[im] {
				seen[im] = true
				visit(im)
			}
		}
	}
	visit(p)
	return seen
}

// The rules the drawing states, each by name.
func TestTheImportRulesHold(t *testing.T) {
	pkgs := readPackages(t)
	importers := func(target string) []string {
		var out []string
		for dir, p := range pkgs {
			if p.imports[target] {
				out = append(out, dir)
			}
		}
		sort.Strings(out)
		return out
	}
	// One road to a host: channel (and so its SSH client) is imported only
	// by the write half (fleet), repair and release/rollout (acting through
	// channel.Host), the
	// host end (channel/local, channel's own packages), cli's wiring and
	// the host process's (hostprocess, which hands repair the Connector to
	// the peers that cli builds, and names no other part of channel).
	channelUsers := map[string]bool{"fleet": true, "repair": true, "release/rollout": true, "channel/local": true, "channel/keeper": true, "channel/sshclient": true, "channel/channeltest": true, "cli": true, "hostprocess": true}
	for _, dir := range importers("channel") {
		if !channelUsers[dir] {
			t.Errorf("%s imports channel; only %v may", dir, sortedKeys(channelUsers))
		}
	}
	// The SSH client (channel/sshclient; with the keeper, which holds its
	// connections, the only code that imports an SSH library) is imported
	// where connections are built: cli (each
	// command's connector, the host process's peers) and the keeper. What
	// acts through a channel.Connector or channel.Host it is handed never
	// links it: the protocol, this machine's end, the write half, repair,
	// the autonomy cycle, the desktop page and the read half.
	for _, dir := range importers("channel/sshclient") {
		if dir != "cli" && dir != "channel/keeper" {
			t.Errorf("%s imports channel/sshclient: it should act through a channel.Connector it is handed", dir)
		}
	}
	for dir, p := range pkgs {
		for e := range p.ext {
			if (e == "golang.org/x/crypto/ssh" || strings.HasPrefix(e, "golang.org/x/crypto/ssh/")) && dir != "channel/sshclient" && dir != "channel/keeper" && dir != "channel/channeltest" {
				t.Errorf("%s imports %s; only channel/sshclient and the keeper speak SSH", dir, e)
			}
		}
	}
	for _, dir := range []string{"channel", "channel/local", "fleet", "repair", "release/rollout", "autonomy", "desktop", "beacon", "resolver", "hostprocess", "convergence"} {
		for _, bad := range []string{"channel/sshclient", "channel/channeltest"} {
			if deps(pkgs, dir)[bad] {
				t.Errorf("%s links %s", dir, bad)
			}
		}
	}
	// The keeper sits beside the pool: neither channel nor the SSH client
	// imports it, and it reaches only downward.
	for _, dir := range []string{"channel", "channel/sshclient"} {
		if deps(pkgs, dir)["channel/keeper"] {
			t.Errorf("%s links channel/keeper", dir)
		}
	}
	for _, bad := range []string{"cli", "fleet", "repair", "beacon", "channel/local"} {
		if deps(pkgs, "channel/keeper")[bad] {
			t.Errorf("channel/keeper links %s", bad)
		}
	}
	// The host process is assembled below the command line and beside the
	// write half: hostprocess links neither cli, fleet, autonomy nor
	// desktop.
	for _, bad := range []string{"cli", "fleet", "autonomy", "desktop"} {
		if deps(pkgs, "hostprocess")[bad] {
			t.Errorf("hostprocess links %s", bad)
		}
	}
	// No production package links package testing (so no branch asks
	// whether it runs under go test), the test helpers apart.
	for dir, p := range pkgs {
		if p.ext["testing"] && !strings.HasSuffix(dir, "test") {
			t.Errorf("%s imports testing", dir)
		}
	}
	// The autonomy cycle and the desktop page act on hosts by calling
	// fleet (and release/rollout for the release versions): they import
	// neither channel, channel/local nor repair, and of everything they
	// link only fleet and release/rollout (and channel's own packages)
	// import channel.
	for _, top := range []string{"autonomy", "desktop"} {
		for _, bad := range []string{"channel", "channel/local", "repair"} {
			if pkgs[top].imports[bad] {
				t.Errorf("%s imports %s", top, bad)
			}
		}
		for dep := range deps(pkgs, top) {
			if pkgs[dep] != nil && pkgs[dep].imports["channel"] && dep != "fleet" && dep != "release/rollout" && !strings.HasPrefix(dep, "channel/") {
				t.Errorf("%s links %s, which imports channel: only fleet and release/rollout may", top, dep)
			}
			if dep == "repair" {
				t.Errorf("%s links repair", top)
			}
		}
	}
	for _, dir := range []string{"beacon", "resolver", "registry", "units", "catalog"} {
		if deps(pkgs, dir)["channel"] {
			t.Errorf("%s reaches channel through its imports", dir)
		}
	}
	// Alerts and the recovery register are leaves: nothing imports repair
	// but the host process (hostprocess, its answering and peer
	// contributors) and the command line (`stado repair`), and register
	// and alert link nothing that talks to hosts.
	for _, dir := range importers("repair") {
		if dir != "cli" && dir != "hostprocess" {
			t.Errorf("%s imports repair; alerts and the recovery register live in their own packages", dir)
		}
	}
	for _, leaf := range []string{"register", "alert"} {
		for _, bad := range []string{"channel", "channel/local", "fleet", "repair", "beacon", "cli", "autonomy", "desktop"} {
			if deps(pkgs, leaf)[bad] {
				t.Errorf("%s depends on %s", leaf, bad)
			}
		}
	}
	// The read half never links the write half.
	for _, dir := range []string{"beacon", "resolver"} {
		for _, bad := range []string{"channel", "repair", "fleet", "autonomy", "desktop", "cli"} {
			if deps(pkgs, dir)[bad] {
				t.Errorf("%s reaches %s", dir, bad)
			}
		}
	}
	// Metrics observe, they never act: no production package links a
	// Prometheus library (package metrics writes the text format itself,
	// with the standard library only, for the host process's memory),
	// only hostprocess (the host process's wiring) imports metrics, and
	// metrics links nothing that talks to hosts.
	for dir, p := range pkgs {
		for e := range p.ext {
			if strings.HasPrefix(e, "github.com/prometheus/") {
				t.Errorf("%s imports %s; package metrics writes the exposition format itself", dir, e)
			}
			if dir == "metrics" && strings.Contains(strings.SplitN(e, "/", 2)[0], ".") {
				t.Errorf("metrics imports %s; it uses the standard library only", e)
			}
		}
	}
	for _, dir := range importers("metrics") {
		if dir != "hostprocess" {
			t.Errorf("%s imports metrics; only hostprocess wires the host process's metrics", dir)
		}
	}
	for _, bad := range []string{"channel", "channel/local", "fleet", "repair", "autonomy", "desktop", "cli", "hostprocess"} {
		if deps(pkgs, "metrics")[bad] {
			t.Errorf("metrics links %s", bad)
		}
	}
	// No cycles, and nothing imports cli or cmd.
	for dir := range pkgs {
		if deps(pkgs, dir)[dir] {
			t.Errorf("%s imports itself through a cycle", dir)
		}
	}
	for _, dir := range importers("cli") {
		if dir != "cmd/stado" {
			t.Errorf("%s imports cli", dir)
		}
	}
}

// Every package's doc comment names each stado package it imports, so the
// reader learns the arrows where the package is described.
func TestEveryPackageDocNamesWhatItImports(t *testing.T) {
	for dir, p := range readPackages(t) {
		if p.doc == "" {
			t.Errorf("%s: no package doc comment", dir)
			continue
		}
		for _, im := range sortedKeys(p.imports) {
			if !strings.Contains(p.doc, im) {
				t.Errorf("%s: its doc does not name %s, which it imports", dir, im)
			}
		}
	}
}

// Every test docs/security.md names exists where it says: a claim whose
// test is renamed or removed fails here instead of going stale.
func TestEverySecurityClaimNamesATestThatExists(t *testing.T) {
	doc, err := os.ReadFile("docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile("`([a-z/]+)\\.((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(refs) < 20 {
		t.Fatalf("docs/security.md names %d tests; its claims should each name one", len(refs))
	}
	for _, r := range refs {
		dir, name := r[1], r[2]
		if dir == "testbed" {
			dir = "tests/testbed"
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		found := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil && regexp.MustCompile(`func `+name+`\(`).Match(b) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/security.md names %s.%s, which does not exist", r[1], name)
		}
	}
}
