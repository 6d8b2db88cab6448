package desktop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/store"
)

// summaryFleet is 1,000 hosts × 20 services with known problems:
// s0 fails on host0000, host0100, … host0900 (10 rows); the beacons of
// host0001, host0251, host0501 and host0751 are stale (80 unknown rows);
// s3 answered 503 on host0002, host0202, … host0802 (5 rows); s5 is
// inactive on host0003 (1 row).
func summaryFleet(t *testing.T) store.Store {
	return fleetFixture(t, 1000, 20, t0, func(b *beacon.Beacon) {
		var h int
		fmt.Sscanf(b.Host, "host%04d", &h)
		if h%100 == 0 {
			b.Units[0] = beacon.UnitReport{Service: "s0", Unit: "s0.service", State: beacon.StateFailing, LastExit: intp(1), Starts: 4, LastStderr: "boom"}
		}
		if h%250 == 1 {
			b.At = t0.Add(-90 * time.Second)
		}
		if h%200 == 2 {
			b.Units[3].Answering = &beacon.Answering{State: beacon.AnswerFinished, Finished: &beacon.Finished{Answered: &beacon.Answered{Status: 503, Detail: "sealed", At: t0}}}
		}
		if h == 3 {
			b.Units[5].State = beacon.StateInactive
		}
	})
}

type summaryJSON struct {
	Kind    string `json:"kind"`
	Summary struct {
		Rows     int `json:"rows"`
		Services []struct {
			Service  string         `json:"service"`
			Rows     int            `json:"rows"`
			Counts   map[string]int `json:"counts"`
			Problems int            `json:"problems"`
			URL      string         `json:"url"`
		} `json:"services"`
		Hosts []struct {
			Host     string         `json:"host"`
			Problems int            `json:"problems"`
			Counts   map[string]int `json:"counts"`
			URL      string         `json:"url"`
		} `json:"hosts"`
		HostsMore int `json:"hosts_more"`
		HostsOK   int `json:"hosts_ok"`
		Problems  []struct {
			Kind, Host, Service string
		} `json:"problems"`
		ProblemsTotal int    `json:"problems_total"`
		ProblemsMore  int    `json:"problems_more"`
		MoreURL       string `json:"more_url"`
	} `json:"summary"`
}

func (p *page) summary(t *testing.T, path string) summaryJSON {
	t.Helper()
	code, body := p.get(t, path)
	var doc summaryJSON
	if code != 200 || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return doc
}

func TestTheSummaryCountsAThousandHostsByServiceAndListsTheWorstFirst(t *testing.T) {
	p := openPage(t, summaryFleet(t))
	start := time.Now()
	doc := p.summary(t, "/summary?format=json")
	t.Logf("1000 hosts x 20 services: /summary?format=json in %v (measured, not asserted)", time.Since(start))
	sm := doc.Summary
	if doc.Kind != "stado.desktop.summary" || sm.Rows != 20000 || len(sm.Services) != 20 {
		t.Fatalf("summary: kind %q, %d rows, %d services; want stado.desktop.summary, 20000, 20", doc.Kind, sm.Rows, len(sm.Services))
	}
	want := map[string]map[string]int{
		"s0": {"failing": 10, "unknown": 4, "healthy": 986},
		"s3": {"attention": 5, "unknown": 4, "healthy": 991},
		"s5": {"down": 1, "unknown": 4, "healthy": 995},
		"s9": {"unknown": 4, "healthy": 996},
	}
	for _, s := range sm.Services {
		if w, ok := want[s.Service]; ok {
			if fmt.Sprint(s.Counts) != fmt.Sprint(w) || s.Rows != 1000 {
				t.Errorf("service %s: %d rows counted %v, want 1000 rows %v", s.Service, s.Rows, s.Counts, w)
			}
			if s.URL != "/?service="+s.Service {
				t.Errorf("service %s links to %q", s.Service, s.URL)
			}
		}
	}
	if sm.ProblemsTotal != 96 || len(sm.Problems) != 20 || sm.ProblemsMore != 76 || sm.MoreURL != "/?mark=problems" {
		t.Errorf("problems: %d total, %d listed, %d more at %q; want 96, 20, 76 at /?mark=problems", sm.ProblemsTotal, len(sm.Problems), sm.ProblemsMore, sm.MoreURL)
	}
	var got []string
	for _, pr := range sm.Problems {
		got = append(got, pr.Kind+" "+pr.Host+"/"+pr.Service)
	}
	var wantOrder []string
	for h := 0; h < 1000; h += 100 {
		wantOrder = append(wantOrder, fmt.Sprintf("failing host%04d/s0", h))
	}
	for s := range 10 {
		wantOrder = append(wantOrder, fmt.Sprintf("unknown host0001/s%d", s))
	}
	if strings.Join(got, ", ") != strings.Join(wantOrder, ", ") {
		t.Errorf("problems listed:\n%s\nwant (failing first, then unknown, in the table's order):\n%s", strings.Join(got, ", "), strings.Join(wantOrder, ", "))
	}
	// hosts: only those with a problem, worst first
	var hosts []string
	for _, h := range sm.Hosts {
		hosts = append(hosts, h.Host)
	}
	wantHosts := "host0000 host0100 host0200 host0300 host0400 host0500 host0600 host0700 host0800 host0900 " +
		"host0001 host0251 host0501 host0751 host0002 host0202 host0402 host0602 host0802 host0003"
	if strings.Join(hosts, " ") != wantHosts || sm.HostsMore != 0 || sm.HostsOK != 980 {
		t.Errorf("hosts with problems: %v (%d more, %d without problems)\nwant %s (0 more, 980 without)", hosts, sm.HostsMore, sm.HostsOK, wantHosts)
	}
	if h := sm.Hosts[10]; h.Problems != 20 || h.Counts["unknown"] != 20 || h.URL != "/?host=host0001&mark=problems" {
		t.Errorf("host0001's entry: %+v", h)
	}
}

func TestTheSummaryAndTheTableFollowTheServiceAndHostFilters(t *testing.T) {
	p := openPage(t, summaryFleet(t))
	sm := p.summary(t, "/summary?format=json&service=s3").Summary
	if sm.Rows != 1000 || len(sm.Services) != 1 || sm.ProblemsTotal != 9 || sm.MoreURL != "/?mark=problems&service=s3" {
		t.Errorf("summary of service s3: %d rows, %d services, %d problems, more at %q; want 1000, 1, 9, /?mark=problems&service=s3",
			sm.Rows, len(sm.Services), sm.ProblemsTotal, sm.MoreURL)
	}
	if len(sm.Hosts) != 9 || sm.Hosts[0].URL != "/?host=host0001&mark=problems&service=s3" {
		t.Errorf("hosts of service s3: %+v", sm.Hosts)
	}
	_, body := p.get(t, "/rows?service=s3&mark=problems")
	if n := strings.Count(body, `<tr class="row `); n != 9 {
		t.Errorf("/rows?service=s3&mark=problems shows %d rows, want 9", n)
	}
	_, body = p.get(t, "/rows?host=host0002")
	if n := strings.Count(body, `<tr class="row `); n != 20 {
		t.Errorf("/rows?host=host0002 shows %d rows, want 20", n)
	}
	// the page: the summary comes before the table, its links carry the filters
	_, body = p.get(t, "/?service=s3")
	body = html.UnescapeString(body)
	si, ti := strings.Index(body, `id="fleet-summary"`), strings.Index(body, `<table class="services">`)
	if si < 0 || ti < 0 || si > ti {
		t.Errorf("the summary (at %d) does not come before the table (at %d)", si, ti)
	}
	for _, want := range []string{`href="/?service=s3"`, `href="/?host=host0001&mark=problems&service=s3"`, `href="/?host=host0002&service=s3"`, `<option value="s3" selected>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page filtered to s3 lacks %s", want)
		}
	}
	// never a row per host: at 1,000 hosts the summary lists at most 20
	_, body = p.get(t, "/summary")
	if n := strings.Count(body, `class="host-count"`); n > 20 {
		t.Errorf("the summary lists %d hosts", n)
	}
}

func TestTheSummaryListsAHealthyRowWhoseReleaseDiffersAsAReleaseProblem(t *testing.T) {
	st := releaseFleet(t)
	// host0000 and host0001 answer successfully: host0000's row is healthy
	// but runs 1.4.2 where 1.4.3 is declared
	ctx := context.Background()
	for _, h := range []string{"host0000", "host0001"} {
		o, err := st.Get(ctx, store.BeaconPrefix+h)
		if err != nil {
			t.Fatal(err)
		}
		var b beacon.Beacon
		if err := json.Unmarshal(o.Value, &b); err != nil {
			t.Fatal(err)
		}
		b.Units[0].Answering = &beacon.Answering{State: beacon.AnswerFinished, Finished: &beacon.Finished{Answered: &beacon.Answered{Status: 200, Successful: true, At: t0}}}
		raw, _ := json.Marshal(b)
		if _, err := st.Put(ctx, store.BeaconPrefix+h, raw, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := openPage(t, st)
	sm := p.summary(t, "/summary?format=json").Summary
	var got []string
	for _, pr := range sm.Problems {
		got = append(got, pr.Kind+" "+pr.Host)
	}
	if strings.Join(got, ", ") != "unknown host0002, release host0000" {
		t.Errorf("problems: %v, want the stale host first, then host0000's release", got)
	}
	if len(sm.Services) != 1 || sm.Services[0].Counts["healthy"] != 2 {
		t.Errorf("services: %+v", sm.Services)
	}
	_, body := p.get(t, "/rows?mark=problems")
	if !strings.Contains(body, `data-host="host0000"`) || strings.Contains(body, `data-host="host0001"`) {
		t.Errorf("mark=problems keeps the wrong rows:\n%s", body)
	}
}
