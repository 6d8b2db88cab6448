package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// ProxyRun is one running proxy process: a Proxy for Service listening on
// Listen (HTTP, or plain TCP when TCP), its waits published to the waiting
// list at ListPath.
type ProxyRun struct {
	Resolver *Resolver
	Service  string
	Listen   string
	TCP      bool
	// Client, when set, is recorded as the caller of every request.
	Client   string
	ListPath string
	Logger   *slog.Logger
}

// Run resolves the service (so a refusal comes before anything is
// published), publishes this process's section of the waiting list, and
// serves until ctx ends; then it withdraws the section. Errors: Resolve's,
// a waiting list that cannot be written, a listener that cannot be opened
// or a server that stops on its own.
func (p *ProxyRun) Run(ctx context.Context) error {
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ep, err := p.Resolver.Resolve(ctx, p.Service)
	if err != nil {
		return err
	}
	rec := &Recorder{Now: p.Resolver.Now}
	pub := &Publisher{Path: p.ListPath, Recorder: rec, RefreshSeconds: p.Resolver.RefreshSeconds, Now: p.Resolver.Now}
	if err := pub.Publish(); err != nil {
		return err
	}
	proxy := &Proxy{Service: p.Service, Transport: &Transport{Resolver: p.Resolver, Recorder: rec}, Client: p.Client,
		Logger: logger.With("service", p.Service)}
	ln, err := net.Listen("tcp", p.Listen)
	if err != nil {
		_ = pub.Withdraw()
		return fmt.Errorf("listen %s: %w", p.Listen, err)
	}
	ln = LimitListener(ln, ProxyMaxConns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := pub.Run(ctx); err != nil {
			logger.Warn("withdraw waiting list", "err", err)
		}
	}()
	mode := "http"
	if p.TCP {
		mode = "tcp"
	}
	logger.Info("resolver proxy", "service", p.Service, "host", ep.Host, "endpoint", ep.String(), "listen", ln.Addr().String(),
		"mode", mode, "caller", p.Resolver.Caller, "waiting_list", pub.Path, "pid", os.Getpid())
	var serveErr error
	if p.TCP {
		serveErr = proxy.ServeTCP(ctx, ln)
	} else {
		srv := NewProxyServer(proxy.Handler())
		stop := context.AfterFunc(ctx, func() {
			shut, c := context.WithTimeout(context.Background(), 2*time.Second)
			defer c()
			_ = srv.Shutdown(shut)
		})
		defer stop()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve %s: %w", p.Listen, err)
		}
	}
	cancel()
	wg.Wait()
	return serveErr
}
