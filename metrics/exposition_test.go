package metrics

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/store"
)

// The text exposition format, version 0.0.4, line by line.
var (
	helpLine   = regexp.MustCompile(`^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) ((?:[^\\\n]|\\[\\n])*)$`)
	typeLine   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)`)
)

// series is one sample line read back: its name, its labels in order, and
// its value.
type series struct {
	name   string
	labels [][2]string
	value  float64
}

// checkExposition reads a scrape as strictly as the format is written and
// reports every line that breaks it: each family is one HELP line, one
// TYPE line and its samples, families in name order, series in label
// value order, a histogram's buckets cumulative in le order up to +Inf
// then _sum and _count, a summary's quantiles then _sum and _count.
func checkExposition(t *testing.T, text string) {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("the scrape does not end with a newline")
	}
	var (
		family, kind string
		seen         = map[string]bool{}
		samples      []series
	)
	flush := func() {
		if family != "" {
			checkFamily(t, family, kind, samples)
		}
		samples = nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, line := range lines {
		at := fmt.Sprintf("line %d %q", i+1, line)
		if m := helpLine.FindStringSubmatch(line); m != nil {
			flush()
			if seen[m[1]] {
				t.Errorf("%s: %s declared twice", at, m[1])
			}
			if family != "" && m[1] < family {
				t.Errorf("%s: %s after %s: families out of name order", at, m[1], family)
			}
			if m[2] == "" {
				t.Errorf("%s: empty HELP", at)
			}
			seen[m[1]] = true
			family, kind = m[1], ""
			if i+1 >= len(lines) {
				t.Fatalf("%s: no TYPE line follows", at)
			}
			tm := typeLine.FindStringSubmatch(lines[i+1])
			if tm == nil || tm[1] != family {
				t.Errorf("%s: not followed by %s's TYPE line", at, family)
			} else {
				kind = tm[2]
			}
			continue
		}
		if typeLine.MatchString(line) {
			if i == 0 || !strings.HasPrefix(lines[i-1], "# HELP ") {
				t.Errorf("%s: a TYPE line without its HELP line", at)
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s: neither HELP, TYPE nor a sample", at)
			continue
		}
		s := series{name: m[1]}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels = append(s.labels, [2]string{p[1], p[2]})
		}
		v, err := parseValue(m[3])
		if err != nil {
			t.Errorf("%s: value %q: %v", at, m[3], err)
		}
		s.value = v
		if !belongs(s.name, family, kind) {
			t.Errorf("%s: a sample of %s under %s (%s)", at, s.name, family, kind)
		}
		samples = append(samples, s)
	}
	flush()
}

// parseValue reads a sample value as the format writes it.
func parseValue(v string) (float64, error) {
	switch v {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(v, 64)
}

func belongs(name, family, kind string) bool {
	switch kind {
	case "histogram":
		return name == family+"_bucket" || name == family+"_sum" || name == family+"_count"
	case "summary":
		return name == family || name == family+"_sum" || name == family+"_count"
	}
	return name == family
}

// checkFamily checks the samples of one family: the order of its series
// and, for histograms and summaries, the shape of each series.
func checkFamily(t *testing.T, family, kind string, samples []series) {
	t.Helper()
	var prev []string
	for i := 0; i < len(samples); {
		// one series: one sample, or a histogram's or summary's run
		key := values(samples[i].labels, "le", "quantile")
		j := i + 1
		if kind == "histogram" || kind == "summary" {
			for j < len(samples) && slices.Equal(values(samples[j].labels, "le", "quantile"), key) {
				j++
			}
		}
		if prev != nil && slices.Compare(prev, key) >= 0 {
			t.Errorf("%s: series %v after %v: out of label value order", family, key, prev)
		}
		prev = key
		run := samples[i:j]
		switch kind {
		case "counter":
			if run[0].value < 0 {
				t.Errorf("%s%v: a negative counter", family, key)
			}
		case "histogram":
			checkHistogram(t, family, key, run)
		case "summary":
			checkSummary(t, family, key, run)
		}
		i = j
	}
}

func checkHistogram(t *testing.T, family string, key []string, run []series) {
	t.Helper()
	n := len(run)
	if n < 3 || run[n-2].name != family+"_sum" || run[n-1].name != family+"_count" {
		t.Errorf("%s%v: not buckets then _sum then _count", family, key)
		return
	}
	last := math.Inf(-1)
	var count float64
	for _, b := range run[:n-2] {
		if b.name != family+"_bucket" {
			t.Errorf("%s%v: %s among the buckets", family, key, b.name)
			return
		}
		le := label(b.labels, "le")
		bound, err := parseValue(le)
		if err != nil || bound <= last {
			t.Errorf("%s%v: le=%q after %v", family, key, le, last)
		}
		if b.value < count {
			t.Errorf("%s%v: le=%q holds %v, below the bucket before it (%v): not cumulative", family, key, le, b.value, count)
		}
		last, count = bound, b.value
	}
	if !math.IsInf(last, 1) {
		t.Errorf("%s%v: the last bucket is not le=\"+Inf\"", family, key)
	}
	if run[n-1].value != count {
		t.Errorf("%s%v: _count %v, the +Inf bucket %v", family, key, run[n-1].value, count)
	}
}

func checkSummary(t *testing.T, family string, key []string, run []series) {
	t.Helper()
	n := len(run)
	if n < 2 || run[n-2].name != family+"_sum" || run[n-1].name != family+"_count" {
		t.Errorf("%s%v: not quantiles then _sum then _count", family, key)
		return
	}
	last := math.Inf(-1)
	for _, q := range run[:n-2] {
		v, err := strconv.ParseFloat(label(q.labels, "quantile"), 64)
		if q.name != family || err != nil || v <= last || v < 0 || v > 1 {
			t.Errorf("%s%v: quantile %q after %v", family, key, label(q.labels, "quantile"), last)
		}
		last = v
	}
}

// values returns the label values of a series but those named in skip.
func values(labels [][2]string, skip ...string) []string {
	out := []string{}
	for _, l := range labels {
		if !slices.Contains(skip, l[0]) {
			out = append(out, l[1])
		}
	}
	return out
}

func label(labels [][2]string, name string) string {
	for _, l := range labels {
		if l[0] == name {
			return l[1]
		}
	}
	return ""
}

func TestAWholeScrapeIsStrictlyTheTextFormatLineByLine(t *testing.T) {
	m := New(t0)
	r := hostProcess(t, m)
	for range 2 {
		if _, err := r.RunPass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	r.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if got, want := rec.Header().Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8"; got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
	text := rec.Body.String()
	checkExposition(t, text)
	// and Prometheus's own parser reads every family the same
	families := parse(t, text)
	for _, name := range typed(text) {
		if _, ok := families[name]; !ok && name != "stado_beacon_refusals" {
			t.Errorf("the parser read no series of %s", name)
		}
	}
	if f := families["stado_store_operation_duration_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != len(storeOps) {
		t.Errorf("the store histogram parsed as %s with %d series", f.GetType(), len(f.GetMetric()))
	}
}

func TestEverySeriesOfAClosedSetIsThereAtZeroBeforeTheFirstPass(t *testing.T) {
	m := New(t0)
	text := scrape(t, m.Handler())
	checkExposition(t, text)
	families := parse(t, text)
	for name, want := range map[string]int{
		"stado_pass_duration_seconds":                   1,
		"stado_passes_total":                            len(passOutcomes),
		"stado_beacon_publish_failures_total":           len(publishCauses),
		"stado_beacon_last_published_timestamp_seconds": 1,
		"stado_units":                                   len(scopes) * len(unitStates),
		"stado_undeclared_units":                        len(unitStates),
		"stado_answering_questions":                     len(answerStates),
		"stado_answering_verdicts_total":                len(verdicts),
		"stado_recoveries_total":                        len(attemptOutcomes),
		"stado_peer_recoveries_total":                   len(attemptOutcomes),
		"stado_release_activations_total":               len(activations),
		"stado_store_operation_duration_seconds":        len(storeOps),
		"stado_store_operation_failures_total":          len(storeOps),
	} {
		f := families[name]
		if got := len(f.GetMetric()); got != want {
			t.Errorf("%s: %d series before any pass, want %d", name, got, want)
		}
		for _, s := range f.GetMetric() {
			if v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + float64(s.GetHistogram().GetSampleCount()); v != 0 {
				t.Errorf("%s%v: %v before any pass, want 0", name, s.GetLabel(), v)
			}
		}
	}
	for _, want := range []string{
		`stado_units{scope="user",state="masked"} 0`,
		`stado_store_operation_duration_seconds_bucket{operation="visit",le="+Inf"} 0`,
		`stado_pass_duration_seconds_count 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the first scrape lacks %q", want)
		}
	}
	// the open sets have no series yet, and say what they are all the same
	for _, name := range []string{"stado_beacon_refusals", "stado_release_active_info"} {
		if !strings.Contains(text, "# TYPE "+name+" gauge\n") {
			t.Errorf("the first scrape does not declare %s", name)
		}
	}
}

func TestAnObservationFallsInEveryBucketFromTheFirstBoundAtOrAboveIt(t *testing.T) {
	m := New(t0)
	clock := t0
	ticks := []time.Duration{4 * time.Millisecond, 3 * time.Millisecond}
	m.now = func() time.Time { c := clock; clock = clock.Add(ticks[0]); return c }
	st := m.Instrument(fileStore(t))
	// 4 ms exactly: le="0.004" holds it (a bound is inclusive)
	if _, err := st.Get(context.Background(), "beacons/none"); err == nil {
		t.Fatal("get of an absent key succeeded")
	}
	ticks = ticks[1:]
	// 3 ms: le="0.004" too, not le="0.002"
	if _, err := st.Get(context.Background(), "beacons/none"); err == nil {
		t.Fatal("get of an absent key succeeded")
	}
	text := scrape(t, m.Handler())
	checkExposition(t, text)
	for _, want := range []string{
		`stado_store_operation_duration_seconds_bucket{operation="get",le="0.002"} 0`,
		`stado_store_operation_duration_seconds_bucket{operation="get",le="0.004"} 2`,
		`stado_store_operation_duration_seconds_bucket{operation="get",le="4.096"} 2`,
		`stado_store_operation_duration_seconds_bucket{operation="get",le="+Inf"} 2`,
		`stado_store_operation_duration_seconds_sum{operation="get"} 0.007`,
		`stado_store_operation_duration_seconds_count{operation="get"} 2`,
		`stado_store_operation_duration_seconds_count{operation="put"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	// the pass histogram's bounds: 10 ms doubling to 20.48 s
	for _, le := range []string{"0.01", "0.32", "20.48", "+Inf"} {
		if !strings.Contains(text, `stado_pass_duration_seconds_bucket{le="`+le+`"} 0`+"\n") {
			t.Errorf("the pass histogram lacks le=%q", le)
		}
	}
}

func TestLabelValuesAreEscapedAndReadBackWhole(t *testing.T) {
	m := New(t0)
	odd := "a \"quoted\" back\\slash\nand a new line"
	p := &beacon.Pass{Beacon: &beacon.Beacon{At: t0,
		Refusals: []beacon.Refusal{{Code: odd}, {Code: "bad\xffutf8"}},
		Releases: &beacon.Releases{State: beacon.ReleasesRead, Products: []beacon.ProductRelease{
			{Product: "web", Active: &beacon.ReleaseImage{Version: `1.0"`}}}},
	}}
	m.PassEnded(beacon.PassReport{Pass: p})
	text := scrape(t, m.Handler())
	checkExposition(t, text)
	got := map[string]bool{}
	for _, s := range parse(t, text)["stado_beacon_refusals"].GetMetric() {
		got[s.GetLabel()[0].GetValue()] = true
	}
	// invalid UTF-8 is replaced, never sent: the format is UTF-8
	if !got[odd] || !got["bad\uFFFDutf8"] || len(got) != 2 {
		t.Errorf("refusal codes read back as %v", got)
	}
	if !strings.Contains(text, `stado_release_active_info{product="web",version="1.0\""} 1`+"\n") {
		t.Errorf("the version's quote is not escaped:\n%s", text)
	}
}

func TestHelpIsEscaped(t *testing.T) {
	f := newFamily("x_total", "a back\\slash and\na new line", "counter")
	got := string(f.appendTo(nil))
	if want := "# HELP x_total a back\\\\slash and\\na new line\n# TYPE x_total counter\nx_total 0\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

func TestTwoScrapesWithNothingBetweenThemSayTheSame(t *testing.T) {
	m := New(t0)
	r := hostProcess(t, m)
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	own := func(text string) string {
		var keep []string
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "stado_") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	// map order, goroutine timing: nothing may reorder a scrape
	first := own(scrape(t, m.Handler()))
	for range 20 {
		if again := own(scrape(t, m.Handler())); again != first {
			t.Fatalf("two scrapes differ:\n%s\n----\n%s", first, again)
		}
	}
}

// runtimeDocumented reads the Go runtime's and the process's families
// docs/metrics.md lists in its table of them.
func runtimeDocumented(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:go|process)_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	return names
}

func TestTheRuntimeAndProcessFamiliesAreTheDocumentedOnes(t *testing.T) {
	text := scrape(t, New(t0).Handler())
	var served []string
	for _, name := range typed(text) {
		if !strings.HasPrefix(name, "stado_") {
			served = append(served, name)
		}
	}
	docs := runtimeDocumented(t)
	if runtime.GOOS != "linux" {
		// the process_ families are read from /proc
		docs = slices.DeleteFunc(docs, func(n string) bool { return strings.HasPrefix(n, "process_") })
	}
	slices.Sort(docs)
	if !slices.Equal(served, docs) {
		t.Errorf("served %v\ndocumented %v", served, docs)
	}
	families := parse(t, text)
	for name, least := range map[string]float64{
		"go_goroutines":                 1,
		"go_threads":                    1,
		"go_memstats_heap_alloc_bytes":  1,
		"go_sched_gomaxprocs_threads":   1,
		"process_resident_memory_bytes": 1 << 20,
		"process_open_fds":              1,
		"process_max_fds":               1,
		"process_start_time_seconds":    float64(time.Now().Add(-24 * time.Hour).Unix()),
	} {
		f, ok := families[name]
		if !ok {
			if !strings.HasPrefix(name, "process_") || runtime.GOOS == "linux" {
				t.Errorf("%s not served", name)
			}
			continue
		}
		if v := f.GetMetric()[0].GetGauge().GetValue(); v < least {
			t.Errorf("%s = %v, want at least %v", name, v, least)
		}
	}
	if runtime.GOOS == "linux" {
		// to the kernel's tick (10 ms)
		if now := float64(time.Now().UnixNano())/1e9 + 0.01; families["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue() > now {
			t.Error("the process started in the future")
		}
	}
}

func TestPassesStoreOperationsAndScrapesMayRunAtOnce(t *testing.T) {
	m := New(t0)
	st := m.Instrument(fileStore(t))
	p := &beacon.Pass{Beacon: &beacon.Beacon{At: t0,
		Units:    []beacon.UnitReport{{Service: "web", Unit: "web.service", State: beacon.StateActive}},
		Refusals: []beacon.Refusal{{Code: "units_unreadable"}}}}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				switch w {
				case 0:
					m.PassEnded(beacon.PassReport{Pass: p, Took: time.Millisecond})
				case 1:
					_, _ = st.Put(context.Background(), fmt.Sprintf("beacons/h%d", i), []byte(`{}`), store.PutOptions{})
				default:
					checkExposition(t, scrape(t, m.Handler()))
				}
			}
		})
	}
	wg.Wait()
	if got := m.passes.value("published"); got != 50 {
		t.Errorf("published %v, want 50", got)
	}
	if n, _ := m.storeDuration.sample("put"); n != 50 {
		t.Errorf("puts %d, want 50", n)
	}
}
