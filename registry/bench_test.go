package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// Budgets on the team machine: parse+validate of 1,000 targets x 20
// services <= 50 ms, one compare-and-swap write of it (fsync included)
// <= 25 ms. Benchmarks measure; no test asserts a duration.

// typicalFleet is 1,000 targets x 20 services as a fleet declares them:
// name, unit, program, three args and a product per service (each its own:
// a product runs once per host), unit paths left to their defaults, one
// directory entry per target.
func typicalFleet() *registry.Document {
	d := fleet(1000, 20)
	d.Directory = d.Directory[:0]
	for i := range d.Targets {
		t := &d.Targets[i]
		for j := range t.Services {
			s := &t.Services[j]
			s.UnitPath, s.Env, s.Product = "", nil, fmt.Sprintf("svc%02d", j)
		}
		d.Directory = append(d.Directory, registry.DirectoryEntry{Service: t.Services[0].Name, Host: t.Name, Port: 9000})
	}
	return d
}

// stored renders d as the store keeps it: compact JSON.
func stored(b *testing.B, d *registry.Document) []byte {
	b.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchParseValidate(b *testing.B, data []byte) {
	b.Logf("document: %d bytes", len(data))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		d, err := registry.Parse(data, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := registry.Validate(d); err != nil {
			b.Fatal(err)
		}
	}
}

// The budgeted figure: the stored form every host process reads.
func BenchmarkParseValidate1000x20(b *testing.B) { benchParseValidate(b, stored(b, typicalFleet())) }

// Every optional field set (unit paths, env, a directory entry per service).
func BenchmarkParseValidate1000x20AllFields(b *testing.B) {
	benchParseValidate(b, stored(b, fleet(1000, 20)))
}

// The same typical document as an operator writes it for push.
func BenchmarkParseValidate1000x20YAML(b *testing.B) {
	data, err := registry.Marshal(typicalFleet(), registry.FormatYAML)
	if err != nil {
		b.Fatal(err)
	}
	benchParseValidate(b, data)
}

func BenchmarkValidate1000x20(b *testing.B) {
	d := typicalFleet()
	for b.Loop() {
		if err := registry.Validate(d); err != nil {
			b.Fatal(err)
		}
	}
}

// One compare-and-swap of the whole document as the registry stores it,
// on the file backend (two fsyncs: the file and its directory).
func BenchmarkCompareAndSwap1000x20(b *testing.B) {
	st, err := store.OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	value := stored(b, typicalFleet())
	ctx := context.Background()
	rev, err := st.CompareAndSwap(ctx, store.RegistryKey, value, 0, store.PutOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for b.Loop() {
		if rev, err = st.CompareAndSwap(ctx, store.RegistryKey, value, rev, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Push of the whole document: validate, marshal, compare-and-swap and
// the history entry.
func BenchmarkPush1000x20(b *testing.B) {
	st, err := store.OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d := typicalFleet()
	ctx := context.Background()
	var rev int64
	for b.Loop() {
		m, err := registry.Push(ctx, st, d, rev, "bench")
		if err != nil {
			b.Fatal(err)
		}
		rev = m.Revision
	}
}
