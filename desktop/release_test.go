package desktop_test

import (
	"context"
	"encoding/json"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// releaseFleet declares brama 1.4.3 on host0000..host0002, each running
// service brama of product brama: host0000 runs 1.4.2 (its last activation
// of 1.4.3 was restored, with the proof's refusal), host0001 runs 1.4.3,
// host0002's beacon is stale.
func releaseFleet(t *testing.T) store.Store {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	doc := &registry.Document{Version: 1, Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.3"}}}
	for h := range 3 {
		doc.Targets = append(doc.Targets, registry.Target{Name: hostName(h), OS: "linux", SSH: registry.SSH{Address: "127.0.3.1", Port: 22, User: "root"},
			Services: []registry.Service{{Name: "brama", Unit: "brama.service", Product: "brama", Program: "/var/lib/stado/release/current/brama"}}})
	}
	if _, err := registry.Push(ctx, st, doc, 0, "desktop release fixture"); err != nil {
		t.Fatal(err)
	}
	img := func(v string) *beacon.ReleaseImage {
		return &beacon.ReleaseImage{Version: v, SHA256: "sha" + strings.ReplaceAll(v, ".", "")}
	}
	for h := range 3 {
		b := &beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: hostName(h), Pass: 7, At: t0.Add(-2 * time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15,
			Units: []beacon.UnitReport{{Service: "brama", Unit: "brama.service", State: beacon.StateActive, PID: 812}}}
		pr := beacon.ProductRelease{Product: "brama"}
		switch h {
		case 0:
			pr.Active, pr.Backup = img("1.4.2"), img("1.4.1")
			pr.Last = &beacon.ReleaseActivation{Version: "1.4.3", Outcome: "restored", At: t0.Add(-time.Minute), PID: 812,
				Refusal: "brama.service: restart did not prove a fresh pid on the activated image"}
		case 1:
			pr.Active, pr.Backup = img("1.4.3"), img("1.4.2")
			pr.Last = &beacon.ReleaseActivation{Version: "1.4.3", Outcome: "activated", At: t0.Add(-time.Minute), PID: 9132}
		case 2:
			pr.Active = img("1.4.3")
			b.At = t0.Add(-90 * time.Second)
		}
		b.Releases = &beacon.Releases{State: beacon.ReleasesRead, Products: []beacon.ProductRelease{pr}}
		raw, _ := json.Marshal(b)
		if _, err := st.Put(ctx, store.BeaconPrefix+b.Host, raw, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestTheTableShowsEachRowsVersionAndTheDeclaredOneWhenTheyDiffer(t *testing.T) {
	p := openPage(t, releaseFleet(t))
	_, body := p.get(t, "/rows")
	body = html.UnescapeString(body)
	if !strings.Contains(body, "<th>version</th>") {
		t.Fatalf("no version column:\n%s", body)
	}
	for host, want := range map[string]string{
		"host0000": `data-status="differs">1.4.2 → 1.4.3</span>`,
		"host0001": `data-status="converged">1.4.3</span>`,
		"host0002": `data-status="unknown" title="`,
	} {
		i := strings.Index(body, `data-host="`+host+`"`)
		if i < 0 {
			t.Fatalf("no row of %s", host)
		}
		row := body[i:]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, want) {
			t.Errorf("%s's row lacks %q:\n%s", host, want, row)
		}
	}
	_, body = p.get(t, "/rows?q=1.4.2")
	if !strings.Contains(body, `data-host="host0000"`) || strings.Contains(body, `data-host="host0001"`) {
		t.Errorf("a search for the version keeps the wrong rows:\n%s", body)
	}
	code, raw := p.get(t, "/rows?format=json&host=host0000")
	var doc struct {
		Kind string `json:"kind"`
		Rows []struct {
			Host    string `json:"host"`
			Release *struct {
				Declared, Status, Version string
				Active, Backup            *struct{ Version, SHA256 string }
				Last                      *struct {
					Outcome, Refusal string
					PID              int
					At               time.Time
				}
			} `json:"release"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || code != 200 {
		t.Fatalf("%d %v: %s", code, err, raw)
	}
	if doc.Kind != "stado.desktop.rows" || len(doc.Rows) != 1 || doc.Rows[0].Release == nil {
		t.Fatalf("%s", raw)
	}
	rel := doc.Rows[0].Release
	if rel.Version != "1.4.2 → 1.4.3" || rel.Declared != "1.4.3" || rel.Status != "differs" || rel.Active.Version != "1.4.2" || rel.Backup.Version != "1.4.1" ||
		rel.Last == nil || rel.Last.Outcome != "restored" || rel.Last.PID != 812 || !strings.Contains(rel.Last.Refusal, "fresh pid") || !rel.Last.At.Equal(t0.Add(-time.Minute)) {
		t.Errorf("release %+v in %s", rel, raw)
	}
}

func TestTheInspectorShowsTheLastActivationsEvidenceAndTheBackupImage(t *testing.T) {
	p := openPage(t, releaseFleet(t))
	_, body := p.get(t, "/inspect?host=host0000&service=brama")
	body = html.UnescapeString(body)
	for _, want := range []string{`<dd class="release-version">1.4.2 → 1.4.3 (differs)`, `<dd class="release-backup">1.4.1 sha256:sha141</dd>`,
		`<span class="release-outcome">restored</span> 1.4.3`, `<span class="release-pid">812</span>`, "did not prove a fresh pid",
		`<span class="release-at">`} {
		if !strings.Contains(body, want) {
			t.Errorf("inspector lacks %q:\n%s", want, body)
		}
	}
	_, body = p.get(t, "/inspect?host=host0002&service=brama")
	if !strings.Contains(html.UnescapeString(body), "unknown → 1.4.3 (unknown: ") {
		t.Errorf("the stale host's inspector:\n%s", body)
	}
}
