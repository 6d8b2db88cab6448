package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

func TestShippedDataIsValidByTheSiteRules(t *testing.T) {
	c, err := shipped()
	if err != nil {
		t.Fatalf("shipped catalog refused: %v", err)
	}
	var names []string
	for _, p := range c.Products() {
		names = append(names, p.Name)
		if p.Origin != OriginShipped || p.Source != SourceProduct {
			t.Errorf("%s: origin %q source %q", p.Name, p.Origin, p.Source)
		}
		if !p.Supports(registry.OSLinux) || !p.Supports(registry.OSDarwin) {
			t.Errorf("%s: every shipped product runs on linux and darwin", p.Name)
		}
	}
	want := []string{"brama", "brama-grant-sync", "oarbank-agent", "skarbiec", "stado", "stado-autonomy"}
	if !slices.Equal(names, want) {
		t.Fatalf("products %v, want %v (sorted)", names, want)
	}
	for _, s := range []string{"object-api", "crypto", "audit-lock", "host"} {
		st, ok := c.Step(s)
		if !ok {
			t.Errorf("no shipped step %s", s)
			continue
		}
		for _, os := range []string{registry.OSLinux, registry.OSDarwin} {
			if _, ok := st.For(os); !ok {
				t.Errorf("step %s has no %s payload", s, os)
			}
		}
	}
	// The shipped bytes pass the exported site path too (the same rules).
	if _, err := ValidateSite(shippedRepair, "repair-catalog.json"); err != nil {
		t.Errorf("repair catalog refused as a site document: %v", err)
	}
}

func TestShippedProductsCarryTheSeedDeclarations(t *testing.T) {
	c := Shipped()
	cases := []struct {
		name, method, path string
		repair             []string
		body               bool
	}{
		// stado asks its public release route, repaired by object-api.
		{"stado", "GET", "/api/release/object?uri=stado://releases/answering-probe", []string{"object-api"}, false},
		// brama asks for a chat completion with a small body.
		{"brama", "POST", "/v1/chat/completions", nil, true},
		// skarbiec asks readiness, repaired by crypto then audit-lock.
		{"skarbiec", "GET", "/readyz", []string{"crypto", "audit-lock"}, false},
		// The oarbank agent asks its workload table.
		{"oarbank-agent", "GET", "/v1/workloads", nil, false},
	}
	for _, tc := range cases {
		p, ok := c.Lookup(tc.name)
		if !ok || p.Answering == nil {
			t.Fatalf("%s: no answering declaration", tc.name)
		}
		a := p.Answering
		if a.Method != tc.method || a.Path != tc.path || !slices.Equal(a.Repair, append([]string{}, tc.repair...)) || (len(a.Body) > 0) != tc.body {
			t.Errorf("%s: answering %+v", tc.name, a)
		}
	}
	sync, _ := c.Lookup("brama-grant-sync")
	if sync.Port != 0 || sync.Answering != nil {
		t.Errorf("brama-grant-sync carries port %d answering %v; it has neither", sync.Port, sync.Answering)
	}
	for _, e := range sync.Env {
		if strings.Contains(strings.ToLower(e.Name), "token") || strings.Contains(strings.ToLower(e.Name), "secret") {
			t.Errorf("brama-grant-sync carries a secret variable %s", e.Name)
		}
	}
	st, _ := c.Lookup("stado")
	if st.Units.Launchd != "com.wisent.stado" || st.Units.Systemd != "stado.service" || st.Program != "/usr/local/bin/stado" || !slices.Equal(st.Args, []string{"host", "run"}) {
		t.Errorf("stado entry %+v", st)
	}
	crypto, _ := c.Step("crypto")
	if !slices.Equal(crypto.Needs, []string{"SKARBIEC_READY_WITHIN_SECONDS"}) {
		t.Errorf("crypto needs %v", crypto.Needs)
	}
}

func TestNameAndEveryNativeIdentitySelectTheSameEntry(t *testing.T) {
	c := Shipped()
	for _, p := range c.Products() {
		for _, key := range []string{p.Name, p.Units.Systemd, p.Units.Launchd} {
			got, ok := c.Lookup(key)
			if !ok || got != p {
				t.Errorf("Lookup(%q) = %v, want the %s entry", key, got, p.Name)
			}
		}
	}
	a, _ := c.Lookup("com.wisent.stado")
	b, _ := c.Lookup("stado")
	if a.Declaration(registry.OSDarwin, "system").Program != b.Declaration(registry.OSDarwin, "system").Program ||
		len(a.RequiredEnv()) != len(b.RequiredEnv()) {
		t.Error("the label and the name must keep the same defaults")
	}
	if _, ok := c.Lookup("stado.socket"); ok {
		t.Error("an identity no product has must not match")
	}
	if _, ok := c.Lookup(""); ok {
		t.Error("the empty string must not match")
	}
}

func TestRecoveryListIsWhatTheHostStepRestarts(t *testing.T) {
	c := Shipped()
	rec := c.Recovery()
	if len(rec) == 0 {
		t.Fatal("empty recovery list")
	}
	host, _ := c.Step("host")
	linux, _ := host.For(registry.OSLinux)
	darwin, _ := host.For(registry.OSDarwin)
	for _, r := range rec {
		if r.Source != SourceRecovery {
			t.Errorf("%s: source %q", r.Name, r.Source)
		}
		if !slices.Contains(linux.Argv, r.Units.Systemd) {
			t.Errorf("host step on linux %v does not restart %s", linux.Argv, r.Units.Systemd)
		}
		if !slices.Contains(darwin.Argv, "system/"+r.Units.Launchd) {
			t.Errorf("host step on darwin %v does not restart %s", darwin.Argv, r.Units.Launchd)
		}
		if got, ok := c.RecoveryEntry(r.Units.Systemd); !ok || got != r {
			t.Errorf("RecoveryEntry(%s) = %v", r.Units.Systemd, got)
		}
	}
	if _, ok := c.Lookup("stado-host"); ok {
		t.Error("a recovery entry must not be found as a product")
	}
}

func TestDeclarationIsWhatEnsureRecords(t *testing.T) {
	p, _ := Shipped().Lookup("skarbiec")
	d := p.Declaration(registry.OSLinux, registry.ScopeSystem)
	if d.Name != "skarbiec" || d.Unit != "skarbiec.service" || d.Program != "/usr/local/bin/skarbiec" ||
		d.Product != "skarbiec" || d.UnitPath != "" || d.Scope != "system" || d.KeepAlive != nil {
		t.Fatalf("declaration %+v", d)
	}
	if d.Env["SKARBIEC_DATA_DIR"] != "/var/lib/skarbiec" {
		t.Errorf("env defaults %v", d.Env)
	}
	d.Args[0] = "changed"
	if p.Args[0] != "serve" {
		t.Error("a declaration must not share its args with the catalog")
	}
	dd := p.Declaration(registry.OSDarwin, registry.ScopeUser)
	if dd.Unit != "com.wisent.skarbiec" || dd.Scope != "user" {
		t.Errorf("darwin declaration %+v", dd)
	}
	s, _ := Shipped().Lookup("stado")
	if got := s.MissingEnv(nil); !slices.Equal(got, []string{"STADO_STORE"}) {
		t.Errorf("stado missing env %v", got)
	}
	if got := s.MissingEnv(map[string]string{"STADO_STORE": "file:///x"}); got != nil {
		t.Errorf("missing env %v after supplying it", got)
	}
	if _, ok := s.Declaration(registry.OSLinux, "").Env["STADO_STORE"]; ok {
		t.Error("a required variable without a default must not be invented")
	}
}

func TestStepCommandRefusesNamingAMissingInput(t *testing.T) {
	c := Shipped()
	crypto, _ := c.Step("crypto")
	_, err := crypto.Command(registry.OSLinux, nil)
	var need *NeedError
	if !errors.As(err, &need) || need.Variable != "SKARBIEC_READY_WITHIN_SECONDS" || !strings.Contains(err.Error(), "SKARBIEC_READY_WITHIN_SECONDS") {
		t.Fatalf("err = %v, want a NeedError naming the variable", err)
	}
	if need.RefusalCode() != "repair_input_missing" {
		t.Errorf("code %q", need.RefusalCode())
	}
	cmd, err := crypto.Command(registry.OSLinux, map[string]string{"SKARBIEC_READY_WITHIN_SECONDS": "30", "OTHER": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Argv[0] != "/usr/local/bin/skarbiec" || cmd.Env["SKARBIEC_READY_WITHIN_SECONDS"] != "30" || cmd.Env["GNUPGHOME"] == "" || cmd.TimeoutSeconds != 120 {
		t.Errorf("command %+v", cmd)
	}
	if _, ok := cmd.Env["OTHER"]; ok {
		t.Error("inputs the step does not need must not reach it")
	}
	p, _ := crypto.For(registry.OSLinux)
	if _, ok := p.Env["SKARBIEC_READY_WITHIN_SECONDS"]; ok {
		t.Error("resolving a command must not modify the catalog's payload")
	}
	_, err = crypto.Command("windows", nil)
	var np *NoPayloadError
	if !errors.As(err, &np) {
		t.Errorf("err = %v, want NoPayloadError", err)
	}
}

// TestBadSiteCatalogsAreRefusedAtTheirPath reads every
// testdata/*.bad.yaml; its first line is "# want: PATH: MESSAGE-PART",
// optionally repeated on the following lines, one per expected violation.
func TestBadSiteCatalogsAreRefusedAtTheirPath(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("%d bad fixtures (%v), want at least 20", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants [][2]string
			for _, line := range strings.Split(string(data), "\n") {
				rest, ok := strings.CutPrefix(line, "# want: ")
				if !ok {
					break
				}
				path, msg, _ := strings.Cut(rest, ": ")
				wants = append(wants, [2]string{path, msg})
			}
			if len(wants) == 0 {
				t.Fatal("fixture has no # want: line")
			}
			_, err = ValidateSite(data, f)
			var ve *registry.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *registry.ValidationError", err)
			}
			if !errors.Is(err, registry.ErrInvalid) || ve.Source != f {
				t.Errorf("err %v must unwrap to ErrInvalid and name %s", err, f)
			}
			if len(ve.Violations) != len(wants) {
				t.Fatalf("got %d violation(s):\n%v\nwant %d: %v", len(ve.Violations), ve, len(wants), wants)
			}
			for i, w := range wants {
				v := ve.Violations[i]
				if v.Path != w[0] || !strings.Contains(v.Message, w[1]) {
					t.Errorf("violation %d = %q, want %s: ...%s...", i, v, w[0], w[1])
				}
			}
		})
	}
}

func TestGoodSiteCatalogAddsAndOverridesEntries(t *testing.T) {
	data, err := os.ReadFile("testdata/site.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ValidateSite(data, "site.good.yaml")
	if err != nil {
		t.Fatalf("good site catalog refused: %v", err)
	}
	hold, ok := m.Lookup("hold-fixture.service")
	if !ok || hold.Origin != OriginSite || hold.Answering == nil || hold.Answering.Repair[0] != "release-hold" {
		t.Fatalf("site product %+v", hold)
	}
	step, ok := m.Step("release-hold")
	if !ok {
		t.Fatal("site step missing")
	}
	if p, _ := step.For(registry.OSLinux); !slices.Equal(p.Argv, []string{"/bin/rm", "-f", "/run/stado-fixture/hold"}) {
		t.Errorf("argv %v", p.Argv)
	}
	if _, ok := step.For(registry.OSDarwin); ok {
		t.Error("a linux-only step must have no darwin payload")
	}
	br, _ := m.Lookup("brama")
	if br.Port != 18080 || br.Origin != OriginSite {
		t.Errorf("brama override %+v", br)
	}
	if ol, _ := m.Step("object-api"); ol.Origin != OriginSite {
		t.Errorf("object-api not overridden: %+v", ol)
	}
	// The shipped catalog is not changed by a merge.
	if br0, _ := Shipped().Lookup("brama"); br0.Port != 8080 {
		t.Errorf("shipped brama changed to port %d", br0.Port)
	}
	if _, ok := Shipped().Lookup("hold-fixture"); ok {
		t.Error("the shipped catalog gained a site product")
	}
	if len(m.Products()) != len(Shipped().Products())+1 {
		t.Errorf("%d products after merge", len(m.Products()))
	}
	// validate names only what the site catalog adds or replaces
	v := Tally("site.good.yaml", m)
	if !v.Valid || strings.Join(v.Products, ",") != "brama,hold-fixture" || strings.Join(v.Steps, ",") != "object-api,release-hold" {
		t.Errorf("tally %+v", v)
	}
	if got := v.Lines(); len(got) != 1 || got[0] != "site.good.yaml: valid site catalog (2 product(s), 2 repair step(s) added or replaced)" {
		t.Errorf("lines %q", got)
	}
}

// The agent's declaration keeps its workloads across a restart: the unit
// delegates its cgroup and stops only the main process on systemd, and
// launchd leaves the rest of the process group running.
func TestOarbankAgentDeclarationLeavesWorkloadsRunningAcrossARestart(t *testing.T) {
	p, ok := Shipped().Lookup("oarbank-agent")
	if !ok {
		t.Fatal("no oarbank-agent product")
	}
	linux := p.Declaration(registry.OSLinux, registry.ScopeSystem)
	if linux.Delegate == nil || !*linux.Delegate || linux.KillMode != "process" {
		t.Fatalf("linux declaration: delegate %v kill_mode %q, want delegate yes and kill_mode process", linux.Delegate, linux.KillMode)
	}
	darwin := p.Declaration(registry.OSDarwin, registry.ScopeSystem)
	if !darwin.AbandonProcessGroup || darwin.KillMode != "" {
		t.Fatalf("darwin declaration: abandon %v kill_mode %q", darwin.AbandonProcessGroup, darwin.KillMode)
	}
	// the declaration owns its settings: changing it leaves the catalog's
	*linux.Delegate = false
	if again := p.Declaration(registry.OSLinux, registry.ScopeSystem); !*again.Delegate {
		t.Fatal("a declaration shares its settings with the catalog")
	}
}

// The agent owns workloads that outlive its unit: its drain step asks it
// to stop them, with its home from the declaration, on both init systems.
func TestOarbankAgentNamesADrainStepThatRunsTheAgentsDrain(t *testing.T) {
	p, _ := Shipped().Lookup("oarbank-agent")
	st, ok := Shipped().Step(p.Drain)
	if p.Drain == "" || !ok {
		t.Fatalf("drain %q, step found %v", p.Drain, ok)
	}
	for _, os := range []string{registry.OSLinux, registry.OSDarwin} {
		cmd, err := st.Command(os, map[string]string{"OARBANK_HOME": "/var/tmp/oarbank"})
		if err != nil || strings.Join(cmd.Argv, " ") != p.Program+" drain" || cmd.Env["OARBANK_HOME"] != "/var/tmp/oarbank" {
			t.Errorf("%s: %+v, %v", os, cmd, err)
		}
	}
	for _, other := range Shipped().Products() {
		if other.Name != "oarbank-agent" && other.Drain != "" {
			t.Errorf("%s declares drain %s: only the agent owns workloads", other.Name, other.Drain)
		}
	}
}
