package resolver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestProxyRunPublishesServesAndWithdraws: a running proxy answers through
// the directory's endpoint with its section in the waiting list, and
// withdraws the section when its context ends.
func TestProxyRunPublishesServesAndWithdraws(t *testing.T) {
	svc := newHoldingService(t)
	doc := directoryFor("brama", svc.port(t))
	list := filepath.Join(t.TempDir(), "resolver-waiting.json")
	run := &ProxyRun{
		Resolver: &Resolver{Load: func(context.Context) (*registry.Document, error) { return doc, nil }, Caller: "host1"},
		Service:  "brama", Listen: freeLoopback(t), ListPath: list,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	var body string
	eventually(t, "the proxy to answer", func() bool {
		resp, err := http.Get("http://" + run.Listen + "/hello")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return true
	})
	if !strings.Contains(body, "ok /hello") {
		t.Fatalf("answer %q", body)
	}
	if l, err := ReadList(list); err != nil || len(l.Publishers) != 1 {
		t.Fatalf("waiting list %+v, %v; want this process's section", l, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l, err := ReadList(list); err != nil || len(l.Publishers) != 0 {
		t.Fatalf("after stop: %+v, %v; want the section withdrawn", l, err)
	}
}

// TestProxyRunRefusesAServiceOutsideTheDirectoryBeforePublishing: the
// refusal comes before the waiting list is written.
func TestProxyRunRefusesAServiceOutsideTheDirectoryBeforePublishing(t *testing.T) {
	doc := directoryFor("brama", 1)
	list := filepath.Join(t.TempDir(), "resolver-waiting.json")
	run := &ProxyRun{Resolver: &Resolver{Load: func(context.Context) (*registry.Document, error) { return doc, nil }, Caller: "host1"},
		Service: "nothing", Listen: freeLoopback(t), ListPath: list}
	var nf *NotInDirectoryError
	if err := run.Run(context.Background()); !errors.As(err, &nf) {
		t.Fatalf("run: %v, want not in the directory", err)
	}
	if l, err := ReadList(list); err != nil || len(l.Publishers) != 0 {
		t.Fatalf("a refused proxy published %+v (%v)", l, err)
	}
}
