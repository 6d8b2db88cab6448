package units

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/wisent/stado/declaration"
)

// The plists of testdata/plists are written after public examples
// (testdata/plists/README.md). Each one that adopts complete renders to the
// golden file beside it (testdata/plists/golden), and Python's plistlib, a
// parser independent of the one stado uses, reads the original and the
// rendering to the same keys and values up to the normalisations
// docs/units.md lists. The others are incomplete with every blocker named.

// plistNormalised applies the documented normalisations to a job read by
// plistlib: Program equal to ProgramArguments[0] is dropped, Program alone
// becomes ProgramArguments, and an absent KeepAlive is false.
func plistNormalised(job map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range job {
		out[k] = v
	}
	if prog, ok := out["Program"]; ok {
		if args, ok := out["ProgramArguments"].([]any); ok && len(args) > 0 && args[0] == prog {
			delete(out, "Program")
		} else if !ok {
			out["ProgramArguments"] = []any{prog}
			delete(out, "Program")
		}
	}
	if _, ok := out["KeepAlive"]; !ok {
		out["KeepAlive"] = false
	}
	return out
}

func TestPublicPlistsRenderBackKeyByKey(t *testing.T) {
	python := requireTool(t, "python3")
	files, err := filepath.Glob(filepath.Join("testdata", "plists", "*.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("%d plists, want at least 20", len(files))
	}
	sort.Strings(files)
	complete := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParseUnitFile("/Library/LaunchDaemons/"+filepath.Base(f), data, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Complete {
				if len(p.Blockers) == 0 {
					t.Fatalf("incomplete without a blocker")
				}
				for _, b := range p.Blockers {
					if b.Key == "" || b.Fix == "" || b.File != filepath.Base(f) {
						t.Errorf("blocker %+v lacks key, fix or file", b)
					}
				}
				return
			}
			complete++
			s := p.Service
			s.UnitPath = ""
			out, err := RenderLaunchd(s, "/var/root")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "plists", "golden", filepath.Base(f))
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("rendering differs from %s:\n%s", golden, Diff(golden, string(want), string(out)))
			}
			rendered := filepath.Join(t.TempDir(), "rendered.plist")
			if err := os.WriteFile(rendered, out, 0o644); err != nil {
				t.Fatal(err)
			}
			orig, back := plistNormalised(plistValues(t, python, f)), plistValues(t, python, rendered)
			keys := map[string]bool{}
			for k := range orig {
				keys[k] = true
			}
			for k := range back {
				keys[k] = true
			}
			for k := range keys {
				if !reflect.DeepEqual(orig[k], back[k]) {
					t.Errorf("key %s: original %v, rendered %v", k, orig[k], back[k])
				}
			}
			// And stado reads its own rendering back to the same declaration.
			again, err := ParseUnitFile("/Library/LaunchDaemons/"+filepath.Base(f), out, nil)
			if err != nil || !again.Complete || !reflect.DeepEqual(Canonical(again.Service, declaration.OSDarwin, "/var/root"), Canonical(p.Service, declaration.OSDarwin, "/var/root")) {
				t.Errorf("parse(render(parse)) differs: %v %+v", err, again.Service)
			}
		})
	}
	if complete*100 < len(files)*70 {
		t.Errorf("only %d of %d plists adopt complete", complete, len(files))
	}
	t.Logf("%d of %d public-example plists adopt complete", complete, len(files))
}
