package store

import (
	"context"
	"fmt"
	"strings"
)

// Opener opens a store for the part of a URL after its scheme.
type Opener func(ctx context.Context, rest string) (Store, error)

var openers = map[string]Opener{}

// RegisterBackend makes Open understand scheme:// URLs. Backends register
// in their init functions; it is not safe to call concurrently with Open.
func RegisterBackend(scheme string, open Opener) { openers[scheme] = open }

// Open opens the store a URL names: file:///DIR or etcd://HOST:PORT/PREFIX.
func Open(ctx context.Context, url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("store url %q: want SCHEME://REST", url)
	}
	open, ok := openers[scheme]
	if !ok {
		return nil, fmt.Errorf("store url %q: unknown scheme %q", url, scheme)
	}
	return open(ctx, rest)
}
