package resolver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// BenchmarkProxyAddedLatency sends 10,000 requests straight to a loopback
// service and 10,000 through the recording proxy, alternating, each over a
// kept-alive connection, and reports p50/p99 of both and what the proxy
// adds. Run with -benchtime=1x: one iteration is the whole load.
//
//	go test -run '^$' -bench ProxyAddedLatency -benchtime=1x ./resolver/
func BenchmarkProxyAddedLatency(b *testing.B) {
	const requests = 10000
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	defer svc.Close()
	_, p, _ := net.SplitHostPort(svc.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	doc := &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Directory:       []registry.DirectoryEntry{{Service: "bench", Host: "host2", Port: port}},
		Targets:         []registry.Target{{Name: "host2", SSH: registry.SSH{Address: "127.0.0.1"}, OS: "linux"}},
	}
	tr := &Transport{
		Resolver: &Resolver{Load: func(context.Context) (*registry.Document, error) { return doc, nil }, Caller: "host1"},
		Recorder: &Recorder{},
	}
	proxy := httptest.NewServer((&Proxy{Service: "bench", Transport: tr}).Handler())
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func(url string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	direct, proxied := make([]time.Duration, requests), make([]time.Duration, requests)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		// warm both connections
		get(svc.URL + "/")
		get(proxy.URL + "/")
		for i := 0; i < requests; i++ {
			direct[i] = get(svc.URL + "/v1/x")
			proxied[i] = get(proxy.URL + "/v1/x")
		}
	}
	b.StopTimer()
	slices.Sort(direct)
	slices.Sort(proxied)
	pct := func(d []time.Duration, q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(pct(direct, 0.50), "direct-p50-µs")
	b.ReportMetric(pct(direct, 0.99), "direct-p99-µs")
	b.ReportMetric(pct(proxied, 0.50), "proxy-p50-µs")
	b.ReportMetric(pct(proxied, 0.99), "proxy-p99-µs")
	b.ReportMetric(pct(proxied, 0.50)-pct(direct, 0.50), "added-p50-µs")
	b.ReportMetric(pct(proxied, 0.99)-pct(direct, 0.99), "added-p99-µs")
	b.ReportMetric(0, "ns/op")
}
