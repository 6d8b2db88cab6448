package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/manpage"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// completionFleet stores a registry of two hosts, three services and a
// declared release product.
func completionFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	svc := func(n string) registry.Service {
		return registry.Service{Name: n, Unit: n + ".service", Program: "/usr/local/bin/" + n}
	}
	doc := &registry.Document{Version: 1,
		Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.0.0"}},
		Targets: []registry.Target{
			{Name: "alpha", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"}, Services: []registry.Service{svc("brama"), svc("skarbiec")}},
			{Name: "beta", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.2"}, Services: []registry.Service{svc("brama"), svc("kolejka")}}}}
	if _, err := registry.Push(context.Background(), st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func complete(t *testing.T, storeURL string, words ...string) []string {
	t.Helper()
	env, out, errb := repairTestEnv(t, t.TempDir())
	env.StoreURL = ""
	env.Getenv = func(k string) string {
		if k == "STADO_STORE" {
			return storeURL
		}
		return map[string]string{"HOME": t.TempDir()}[k]
	}
	if code := Run(context.Background(), env, append([]string{"stado", "__complete", "--"}, words...)); code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", words, code, errb)
	}
	if errb.Len() != 0 {
		t.Errorf("__complete %q wrote to stderr: %s", words, errb)
	}
	return strings.Fields(out.String())
}

func TestTheCompleterOffersTheRegistrysNames(t *testing.T) {
	url := "file://" + completionFleet(t)
	absent := filepath.Join(t.TempDir(), "absent")
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{"service", "ensure", ""}, []string{"brama", "kolejka", "skarbiec"}},                     // NAME from the help's placeholder
		{[]string{"service", "ensure", "b"}, []string{"brama"}},                                           // the prefix typed
		{[]string{"service", "ensure", "brama", "--host", ""}, []string{"alpha", "beta"}},                 // --host takes a host
		{[]string{"service", "list", "--service", "sk"}, []string{"skarbiec"}},                            // --service takes a service
		{[]string{"release", "version", "set", ""}, []string{"brama"}},                                    // PRODUCT: the declared releases
		{[]string{"host", "bootstrap", ""}, []string{"alpha", "beta"}},                                    // HOST
		{[]string{"service", "ensure", "brama", "--host", "alpha", ""}, nil},                              // no second argument
		{[]string{"serv"}, []string{"service"}},                                                           // commands
		{[]string{"service", "ensure", "--dry"}, []string{"--dry-run"}},                                   // flags
		{[]string{"--store", "file://" + absent, "service", "ensure", ""}, nil},                           // the store the line names, unreadable: nothing
		{[]string{"host", ""}, []string{"bootstrap", "channel", "health", "run", "unit", "unlock-store"}}, // a group's commands, hidden ones left out
	}
	for _, c := range cases {
		if got := complete(t, url, c.words...); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.words, got, c.want)
		}
	}
	if _, err := os.Stat(absent); err == nil {
		t.Errorf("completing created the store %s", absent)
	}
}

func TestTheCompleterPrintsNothingWhenTheStoreCannotBeRead(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent")
	for _, url := range []string{"file://" + absent, "nosuch://x", "etcd://127.0.0.1:1/stado"} {
		start := time.Now()
		if got := complete(t, url, "service", "ensure", ""); len(got) != 0 {
			t.Errorf("%s: offered %q", url, got)
		}
		if d := time.Since(start); d > completeBound+time.Second {
			t.Errorf("%s: took %v, bound %v", url, d, completeBound)
		}
	}
	if _, err := os.Stat(absent); err == nil {
		t.Errorf("completing created the store %s", absent)
	}
}

func TestEachCompletionScriptIsValidShell(t *testing.T) {
	checks := map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), NewEnv(strings.NewReader(""), &out, &errb), []string{"stado", "completion", shell}); code != 0 || !strings.Contains(out.String(), "__complete") {
			t.Fatalf("%s: exit %d, %s%s", shell, code, out.String(), errb.String())
		}
		argv := checks[shell]
		if _, err := exec.LookPath(argv[0]); err != nil {
			if testbed.Required() { // CI: make deps installs it
				t.Fatalf("%s is not installed (make deps installs it): its script's syntax cannot be checked", shell)
			}
			t.Logf("%s not installed: its script's syntax is not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "stado."+shell)
		if err := os.WriteFile(f, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(argv[0], append(argv[1:], f)...).CombinedOutput(); err != nil {
			t.Errorf("%s rejects its script: %v: %s", shell, err, b)
		}
	}
	var errb bytes.Buffer
	if code := Run(context.Background(), NewEnv(strings.NewReader(""), &bytes.Buffer{}, &errb), []string{"stado", "completion", "tcsh"}); code != ExitUsage {
		t.Errorf("tcsh: exit %d, %s", code, errb.String())
	}
}

func TestEveryCommandHasASectionInItsGroupsManPage(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	if code := Run(context.Background(), NewEnv(strings.NewReader(""), &bytes.Buffer{}, &errb), []string{"stado", "__man", "--dir", dir}); code != 0 {
		t.Fatalf("__man: exit %d: %s", code, errb.String())
	}
	app := NewApp(NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	n := 0
	manpage.Walk(app, func(path string, c *ucli.Command) {
		n++
		page := manpage.PageOf(app, path)
		roff, err := os.ReadFile(filepath.Join(dir, page+".1"))
		if err != nil {
			t.Errorf("%s: no page %s(1): %v", path, page, err)
			return
		}
		if page == strings.ReplaceAll(path, " ", "-") { // a group: its page is its section
			return
		}
		if !regexp.MustCompile(`(?m)^\.SS ` + regexp.QuoteMeta(path) + `$`).Match(roff) {
			t.Errorf("%s: no section in %s(1)", path, page)
		}
	})
	for _, group := range []string{"service", "registry", "host", "release"} {
		if _, err := os.Stat(filepath.Join(dir, "stado-"+group+".1")); err != nil {
			t.Errorf("no stado-%s(1): %v", group, err)
		}
	}
	if n < 40 {
		t.Errorf("walked %d commands", n)
	}
}

func TestVersionReportsTheBuildsVersionAndCommit(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "1.2.3", "abc1234"
	for _, args := range [][]string{{"version"}, {"--version"}, {"version", "--json"}} {
		var out bytes.Buffer
		Run(context.Background(), NewEnv(strings.NewReader(""), &out, &bytes.Buffer{}), append([]string{"stado"}, args...))
		if !strings.Contains(out.String(), "1.2.3") || !strings.Contains(out.String(), "abc1234") {
			t.Errorf("%q: %s", args, out.String())
		}
	}
}
