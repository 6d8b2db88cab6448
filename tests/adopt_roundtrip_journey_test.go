package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
	"github.com/wisent/stado/units"
)

// The adopt round-trip journey proves on a real systemd that stado's
// rendering of an adopted declaration is the unit it was adopted from: every
// service unit of units/testdata/corpus that adopts complete is installed as
// written on host1 and as stado renders its adopted declaration on host2,
// under the same name; neither is started (their programs need not exist),
// and systemd's own reading of both (systemctl show) must agree property by
// property, up to the normalisations docs/units.md lists. A template is
// installed as the template on host1 and compared as its instance
// stado-corpus, which host2 reads from the rendering of the adopted
// instance, a plain file of the instance's name.

// roundTripProperties are the properties compared: what runs, as whom, where,
// how it restarts and stops, its dependencies, limits and sandboxing.
var roundTripProperties = []string{
	"LoadState", "UnitFileState", "Description", "Type", "ExecStart", "ExecStartPre", "ExecStartPost",
	"ExecReload", "ExecStop", "ExecStopPost", "Environment", "EnvironmentFiles", "User", "Group",
	"WorkingDirectory", "UMask", "Restart", "RestartUSec", "TimeoutStopUSec", "StartLimitIntervalUSec",
	"StartLimitBurst", "KillMode", "Delegate", "PIDFile", "Nice", "IOSchedulingClass", "IOSchedulingPriority",
	"LimitNOFILE", "LimitNOFILESoft", "LimitNPROC", "LimitCORE", "LimitMEMLOCK", "After", "Before", "Wants",
	"Requires", "Conflicts", "StandardOutput", "StandardError", "RemainAfterExit", "NotifyAccess",
	"PrivateTmp", "ProtectSystem", "ProtectHome", "NoNewPrivileges", "RuntimeDirectory", "CapabilityBoundingSet",
	"Documentation", "ConditionPathExists", "SuccessExitStatus",
}

// sortedWordProperties are compared as sets of words: systemd lists them in
// assignment order, and stado writes Environment= sorted by name.
var sortedWordProperties = map[string]bool{"Environment": true, "After": true, "Before": true, "Wants": true, "Requires": true, "Conflicts": true}

type roundTripUnit struct {
	name     string // the unit compared on both hosts
	file     string // the file host1 installs the original as (a template for an instance)
	source   string // corpus path
	original []byte
	dropins  []units.DropIn
	rendered []byte
}

// roundTripInstance is the instance a corpus template is installed and
// adopted as (units/corpus_test.go counts templates by the same instance).
const roundTripInstance = "stado-corpus"

func TestAdoptedCorpusUnitsShowTheSamePropertiesOnRealSystemd(t *testing.T) {
	bed := testbed.Shared(t, 2)
	h1, h2 := bed.Host(1), bed.Host(2)
	root := filepath.Join(unitsRepoRoot(t), "units", "testdata", "corpus")

	var sources []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".service") && !strings.HasSuffix(filepath.Dir(path), ".d") {
			sources = append(sources, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(sources)
	// Each unit is installed under a name of this journey's own, so no unit
	// of the host (its sshd among them) is touched: stado-rt-NNN.service, a
	// template as stado-rt-NNN@.service compared as its instance
	// stado-rt-NNN@stado-corpus.service (an instance file keeps its
	// instance). It is adopted under that name, so the specifiers of the
	// name mean the same on both hosts.
	var all []roundTripUnit
	templates := 0
	for i, path := range sources {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var dropins []units.DropIn
		if ents, err := os.ReadDir(path + ".d"); err == nil {
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(path+".d", e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				dropins = append(dropins, units.DropIn{Path: filepath.Join(path+".d", e.Name()), Content: string(b)})
			}
		}
		base := filepath.Base(path)
		file := fmt.Sprintf("stado-rt-%03d.service", i)
		name := file
		if at := strings.IndexByte(base, '@'); at >= 0 {
			file = fmt.Sprintf("stado-rt-%03d%s", i, base[at:])
			name = file
			if units.IsTemplate(file) {
				name = units.InstanceName(file, roundTripInstance)
			}
		}
		p, err := units.ParseUnit("/etc/systemd/system/"+file, name, data, dropins)
		if err != nil || !p.Complete {
			continue
		}
		s := p.Service
		s.UnitPath = ""
		out, err := units.RenderSystemd(s)
		if err != nil {
			t.Errorf("%s: render: %v", path, err)
			continue
		}
		if name != file {
			templates++
		}
		rel, _ := filepath.Rel(root, path)
		all = append(all, roundTripUnit{name: name, file: file, source: rel, original: data, dropins: dropins, rendered: out})
	}
	if len(all) < 60 {
		t.Fatalf("%d complete corpus units, want at least 60", len(all))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var paths []string
	for i := range all {
		u := &all[i]
		path := "/etc/systemd/system/" + u.file
		rendered := "/etc/systemd/system/" + u.name
		paths = append(paths, path)
		if rendered != path {
			paths = append(paths, rendered)
		}
		if err := bed.WriteFile(h1, path, u.original, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(u.dropins) > 0 {
			if _, _, err := bed.Exec(ctx, h1, "mkdir", "-p", path+".d"); err != nil {
				t.Fatal(err)
			}
			for _, d := range u.dropins {
				if err := bed.WriteFile(h1, path+".d/"+filepath.Base(d.Path), []byte(d.Content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := bed.WriteFile(h2, rendered, u.rendered, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, h := range []testbed.Host{h1, h2} {
			args := append([]string{"rm", "-rf"}, paths...)
			for _, p := range paths {
				args = append(args, p+".d")
			}
			_, _, _ = bed.Exec(ctx, h, args...)
			_, _, _ = bed.Exec(ctx, h, "systemctl", "daemon-reload")
		}
	})
	for _, h := range []testbed.Host{h1, h2} {
		if _, stderr, err := bed.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
			t.Fatalf("%s: daemon-reload: %v %s", h.Name, err, stderr)
		}
	}

	props := strings.Join(roundTripProperties, ",")
	compared := 0
	for _, u := range all {
		a, err := showProperties(ctx, bed, h1, u.name, props)
		if err != nil {
			t.Fatal(err)
		}
		b, err := showProperties(ctx, bed, h2, u.name, props)
		if err != nil {
			t.Fatal(err)
		}
		if a["LoadState"] != "loaded" {
			t.Errorf("%s: the original does not load on host1 (%s)", u.source, a["LoadState"])
			continue
		}
		if u.name != u.file {
			// host1 instantiates the template; host2 reads the instance's
			// own file, stado's rendering.
			fa, err := showProperties(ctx, bed, h1, u.name, "FragmentPath")
			if err != nil {
				t.Fatal(err)
			}
			fb, err := showProperties(ctx, bed, h2, u.name, "FragmentPath")
			if err != nil {
				t.Fatal(err)
			}
			if fa["FragmentPath"] != "/etc/systemd/system/"+u.file || fb["FragmentPath"] != "/etc/systemd/system/"+u.name {
				t.Errorf("%s: %s is loaded from %q on host1 and %q on host2, want the template and the instance's own file", u.source, u.name, fa["FragmentPath"], fb["FragmentPath"])
			}
		}
		for _, p := range roundTripProperties {
			// A kept %H (or %l) expands to each host's own name.
			av := strings.ReplaceAll(a[p], h1.Name, "%H")
			bv := strings.ReplaceAll(b[p], h2.Name, "%H")
			if sortedWordProperties[p] {
				av, bv = sortedWords(av), sortedWords(bv)
			}
			if av != bv {
				t.Errorf("%s: %s differs\n original: %s\n rendered: %s\n--- rendering:\n%s", u.source, p, av, bv, u.rendered)
			}
		}
		compared++
	}
	t.Logf("%d adopted units (%d of them template instances) compared on %d properties each: original on %s, stado's rendering on %s", compared, templates, len(roundTripProperties), h1.Name, h2.Name)
}

// showProperties reads props of unit on h with systemctl show.
func showProperties(ctx context.Context, bed *testbed.Bed, h testbed.Host, unit, props string) (map[string]string, error) {
	out, stderr, err := bed.Exec(ctx, h, "systemctl", "show", unit, "-p", props)
	if err != nil {
		return nil, fmt.Errorf("%s: systemctl show %s: %v %s", h.Name, unit, err, stderr)
	}
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

func sortedWords(s string) string {
	w := strings.Fields(s)
	sort.Strings(w)
	return strings.Join(w, " ")
}

// TestAdoptNamesEveryBlockerAndShowReadsTheHostsTruth adopts a unit that
// cannot be reinstalled from a document, through the stado binary over SSH:
// every blocker comes back at once, the one in a drop-in named by the
// drop-in's file and line; service show --host then reads the unit as the
// host holds it. A masked unit reads masked.
func TestAdoptNamesEveryBlockerAndShowReadsTheHostsTruth(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 2)
	h := w.bed.Host(1)
	const blocked, masked = "stado-rt-blocked.service", "stado-rt-masked.service"
	ctx := journeyCtx(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _, _ = w.bed.Exec(ctx, h, "systemctl", "unmask", masked)
		_, _, _ = w.bed.Exec(ctx, h, "rm", "-rf", "/etc/systemd/system/"+blocked, "/etc/systemd/system/"+blocked+".d")
		_, _, _ = w.bed.Exec(ctx, h, "systemctl", "daemon-reload")
	})
	w.push(t, []testbed.Host{h})
	unit := "[Unit]\nDescription=blocked\n\n[Service]\nSockets=stado-rt-blocked.socket\nExecStart=/bin/sleep 1000\n"
	if err := w.bed.WriteFile(h, "/etc/systemd/system/"+blocked, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.bed.Exec(ctx, h, "mkdir", "-p", "/etc/systemd/system/"+blocked+".d"); err != nil {
		t.Fatal(err)
	}
	if err := w.bed.WriteFile(h, "/etc/systemd/system/"+blocked+".d/10-argv0.conf", []byte("[Service]\nExecStart=\nExecStart=@/bin/sleep sleeper 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.bed.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := w.run(t, "service", "adopt", blocked, "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("adopt: exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Complete bool            `json:"complete"`
		Blockers []units.Blocker `json:"blockers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]units.Blocker{}
	for _, b := range res.Blockers {
		byKey[b.Key] = b
	}
	if res.Complete || len(res.Blockers) != 2 {
		t.Fatalf("adopt: %s, want 2 blockers", out)
	}
	if b := byKey["ExecStart"]; b.File != blocked+".d/10-argv0.conf" || b.Line != 3 || b.Fix == "" {
		t.Errorf("the drop-in's blocker: %+v", b)
	}
	if b := byKey["Sockets"]; b.File != blocked || b.Line != 5 {
		t.Errorf("the unit's blocker: %+v", b)
	}
	code, out, errOut = w.run(t, "service", "show", "stado-rt-blocked", "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("show --host: exit %d\n%s\n%s", code, out, errOut)
	}
	var shown struct {
		Truth struct {
			File     *units.UnitFile `json:"file"`
			Verdict  *units.Verdict  `json:"verdict"`
			Blockers []units.Blocker `json:"blockers"`
		} `json:"host_truth"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	if f := shown.Truth.File; f == nil || f.Path != "/etc/systemd/system/"+blocked || len(f.DropIns) != 1 || !strings.Contains(f.Content, "Sockets=") ||
		shown.Truth.Verdict == nil || len(shown.Truth.Blockers) != 2 {
		t.Errorf("show --host: %s", out)
	}

	if _, stderr, err := w.bed.Exec(ctx, h, "systemctl", "mask", masked); err != nil {
		t.Fatalf("mask: %v %s", err, stderr)
	}
	stdout, stderr, err := w.bed.SSH(ctx, h, "stado", "host", "unit", "show", masked, "--json")
	if err != nil || !strings.Contains(stdout, `"state": "masked"`) && !strings.Contains(stdout, `"state":"masked"`) {
		t.Errorf("a masked unit: %v\n%s\n%s", err, stdout, stderr)
	}
}
