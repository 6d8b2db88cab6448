package units

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
)

// corpusUnit is one unit file of testdata/corpus with its drop-ins.
type corpusUnit struct {
	path    string // below testdata/corpus
	data    []byte
	dropins []DropIn
}

// readCorpus reads every unit file of testdata/corpus (drop-in directories
// applied to the unit they belong to, in name order).
func readCorpus(t *testing.T) []corpusUnit {
	t.Helper()
	var out []corpusUnit
	root := filepath.Join("testdata", "corpus")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(filepath.Dir(path), ".d") || strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		u := corpusUnit{path: strings.TrimPrefix(path, root+"/"), data: data}
		if ents, err := os.ReadDir(path + ".d"); err == nil {
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(path+".d", e.Name()))
				if err != nil {
					return err
				}
				u.dropins = append(u.dropins, DropIn{Path: filepath.Join(path+".d", e.Name()), Content: string(b)})
			}
		}
		out = append(out, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// installPath is where a package installs a corpus file.
func installPath(u corpusUnit) string {
	if strings.HasSuffix(u.path, ".plist") {
		return "/Library/LaunchDaemons/" + filepath.Base(u.path)
	}
	return "/lib/systemd/system/" + filepath.Base(u.path)
}

// corpusInstance is the instance a corpus template is adopted as: a
// template counts as adopting complete when this instance of it does. Its
// '-' makes the unescaped specifiers (%I, %f, %J) differ from the escaped
// ones, as they do for real instances such as postgresql@15-main.
const corpusInstance = "stado-corpus"

// corpusUnitName is the unit a corpus file is adopted as: a template
// (NAME@.service) as its instance NAME@stado-corpus.service, any other
// file as its own name.
func corpusUnitName(u corpusUnit) string {
	name := filepath.Base(u.path)
	if IsTemplate(name) {
		return InstanceName(name, corpusInstance)
	}
	return name
}

// parseCorpusUnit parses u where its package installs it, as the unit
// corpusUnitName names.
func parseCorpusUnit(u corpusUnit) (Parsed, error) {
	return ParseUnit(installPath(u), corpusUnitName(u), u.data, u.dropins)
}

func TestCorpusServiceUnitsAdoptCompleteOrNameEveryBlocker(t *testing.T) {
	units := readCorpus(t)
	services, complete, templates, templatesComplete := 0, 0, 0, 0
	for _, u := range units {
		p, err := parseCorpusUnit(u)
		if err != nil {
			t.Errorf("%s: %v", u.path, err)
			continue
		}
		isService := strings.HasSuffix(u.path, ".service")
		isTemplate := isService && strings.Contains(filepath.Base(u.path), "@")
		if isService {
			services++
		}
		if isTemplate {
			templates++
		}
		if p.Complete {
			if isService {
				complete++
			}
			if isTemplate {
				templatesComplete++
				if p.Service.Unit != corpusUnitName(u) || strings.Contains(p.Service.Unit, "@.") {
					t.Errorf("%s: adopted as %s, want the instance %s", u.path, p.Service.Unit, corpusUnitName(u))
				}
			}
			continue
		}
		if len(p.Blockers) == 0 {
			t.Errorf("%s: incomplete without a blocker", u.path)
		}
		for _, b := range p.Blockers {
			if b.Key == "" || b.File == "" || b.Reason == "" || b.Fix == "" {
				t.Errorf("%s: blocker %+v lacks its key, file, reason or fix", u.path, b)
			}
		}
		if testing.Verbose() {
			t.Logf("incomplete %s: %s", u.path, p.Reason)
		}
	}
	t.Logf("%d of %d service units adopt complete (%.1f %%); %d of the %d are templates or instance files (a template adopted as its instance %s), %d of them complete",
		complete, services, 100*float64(complete)/float64(services), templates, services, corpusInstance, templatesComplete)
	if services < 60 || float64(complete) < 0.85*float64(services) {
		t.Errorf("%d of %d service units adopt complete; want at least 85 %% of at least 60", complete, services)
	}
}

func TestCorpusRoundTripParseRenderParseIsTheSameDeclaration(t *testing.T) {
	for _, u := range readCorpus(t) {
		p, err := parseCorpusUnit(u)
		if err != nil || !p.Complete {
			continue
		}
		goos := declaration.OSLinux
		if IsPlist(u.data) {
			goos = declaration.OSDarwin
		}
		s := p.Service
		s.UnitPath = ""
		out, err := Render(s, goos, "/home/op")
		if err != nil {
			t.Errorf("%s: render: %v", u.path, err)
			continue
		}
		back, err := ParseUnit(installPath(u), corpusUnitName(u), out, nil)
		if err != nil || !back.Complete {
			t.Errorf("%s: the rendering does not parse back complete: %v %s\n%s", u.path, err, back.Reason, out)
			continue
		}
		b := back.Service
		b.UnitPath = ""
		if !reflect.DeepEqual(Canonical(s, goos, "/home/op"), Canonical(b, goos, "/home/op")) {
			t.Errorf("%s: parse(render(parse)) differs:\n got  %+v\n want %+v\n%s", u.path, b, s, out)
		}
		again, _ := Render(b, goos, "/home/op")
		if string(again) != string(out) {
			t.Errorf("%s: render is not stable over a round trip", u.path)
		}
	}
}
