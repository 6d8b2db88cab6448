package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
)

// releaseRefusedHost is a local.Host whose release directory must never be
// opened: its requests are refused first.
func releaseRefusedHost(t *testing.T) *local.Host {
	h := refusedHost(t, "/home/alice")
	h.Release = func(context.Context) (*hostend.Host, func(), error) {
		t.Error("the release directory was opened for a request that should have been refused")
		return nil, nil, refusal.New(refusal.NotFound, "refused call reached the release directory")
	}
	return h
}

func TestReleaseActivateChecksTheRequestBeforeActing(t *testing.T) {
	h := releaseRefusedHost(t)
	ok := release.ActivateRequest{Product: "brama", Version: "1.4.3", Scope: "system", Unit: "brama.service", Port: 8080, Wait: time.Minute, Mode: "apply"}
	for _, tc := range []struct {
		name string
		edit func(*release.ActivateRequest)
		code refusal.Code
	}{
		// a scope the channel does not know
		{"scope", func(r *release.ActivateRequest) { r.Scope = "global" }, refusal.InvalidScope},
		// a unit name systemd would not accept
		{"unit", func(r *release.ActivateRequest) { r.Unit = "../brama.service" }, refusal.InvalidUnit},
		// a port beyond TCP's
		{"port", func(r *release.ActivateRequest) { r.Port = 70000 }, refusal.InvalidPort},
		// a port with no unit to own it
		{"port without unit", func(r *release.ActivateRequest) { r.Unit = "" }, refusal.InvalidArguments},
		// a wait beyond the bound
		{"wait", func(r *release.ActivateRequest) { r.Wait = 2 * time.Hour }, refusal.InvalidDuration},
		// a mode that is neither apply nor plan
		{"mode", func(r *release.ActivateRequest) { r.Mode = "force" }, refusal.InvalidArguments},
		// a product that would name a path
		{"product", func(r *release.ActivateRequest) { r.Product = "../brama" }, refusal.Validation},
		// a declaration of another unit than the one to restart
		{"service of another unit", func(r *release.ActivateRequest) {
			r.Service = &registry.Service{Name: "other", Unit: "other.service", Program: "/usr/local/bin/other"}
		}, refusal.InvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := ok
			tc.edit(&req)
			if _, err := h.ReleaseActivate(context.Background(), req); code(err) != tc.code {
				t.Fatalf("%v (code %q), want %s", err, code(err), tc.code)
			}
		})
	}
}

func TestReleaseVerbsWithoutAReleaseDirectoryAreRefused(t *testing.T) {
	h := refusedHost(t, "/home/alice")
	if _, err := h.ReleaseState(context.Background(), release.StateRequest{}); code(err) != refusal.NoManager {
		t.Fatalf("%v, want no_manager", err)
	}
}

func TestReleaseStateReadsTheHostsStateFile(t *testing.T) {
	root := t.TempDir()
	st := release.HostState{Products: map[string]release.ProductState{"brama": {Active: &release.Image{Product: "brama", Version: "1.4.3", SHA256: "ab"}}}}
	if err := release.WriteHostState(root, st); err != nil {
		t.Fatal(err)
	}
	closed := false
	h := refusedHost(t, "/home/alice")
	h.Release = func(context.Context) (*hostend.Host, func(), error) {
		return &hostend.Host{Root: root}, func() { closed = true }, nil
	}
	res, err := h.ReleaseState(context.Background(), release.StateRequest{})
	if err != nil || res.State.Products["brama"].Active.Version != "1.4.3" {
		t.Fatalf("state %+v %v, want brama 1.4.3 active", res.State, err)
	}
	if !closed {
		t.Fatal("the store was left open")
	}
}
