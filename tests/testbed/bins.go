package testbed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/wisent/stado/safefile"
)

// Every host has a /usr/local/bin and a /var/lib/stado of its own
// (HostBinDir, HostStadoDir). The programs under test live in BinDir and are
// placed in each host's /usr/local/bin by a hard link renamed into place, so
// a host that replaces its /usr/local/bin/stado (a release bootstrap does)
// changes no other host. A bare host (TESTBED_BARE at `up`, or WithoutStado
// for one test) gets no program: its marker file `bare` in the host's state
// dir makes InstallStado, InstallBin and `testbed.sh install-bin` skip it.

// bareMark is the file in a host's state dir that marks it bare.
const bareMark = "bare"

// stadoUnit is the unit a bootstrap installs and WithoutStado removes.
const stadoUnit = "stado.service"

// InstallStado puts the binary at path as /usr/local/bin/stado of every host
// that is not bare, atomically: a copy in BinDir first, then a hard link (a
// copy where linking fails) renamed into each host's own /usr/local/bin. The
// machine's /usr/local/bin is not touched. Installing again replaces it.
func (b *Bed) InstallStado(t testing.TB, path string) {
	t.Helper()
	b.place(t, b.stage(t, path, "stado"))
}

// InstallShared places the program at path as /usr/local/bin/NAME of every
// host that is not bare, as InstallBin does, but keeps it for the rest of the
// process (as InstallStado keeps stado): for a fixture many journeys share.
// Calling it again places it again, so a host booted since gets it too.
func (b *Bed) InstallShared(t testing.TB, path string) {
	t.Helper()
	b.place(t, b.stage(t, path, filepath.Base(path)))
}

// InstallBin places the program at path (a fixture a journey built) as
// /usr/local/bin/NAME of every host that is not bare, NAME being its base
// name: copied into BinDir unless it is already there, then linked into each
// host as InstallStado does. The hosts' copies are removed when t ends (the
// one in BinDir too).
func (b *Bed) InstallBin(t testing.TB, path string) {
	t.Helper()
	name := filepath.Base(path)
	src := b.stage(t, path, name)
	t.Cleanup(func() {
		os.Remove(src)
		for _, h := range b.hosts {
			os.Remove(filepath.Join(b.HostBinDir(h), name))
		}
	})
	b.place(t, src)
}

// stage copies the program at path into BinDir as name (unless it is that
// file already) and returns the copy's path.
func (b *Bed) stage(t testing.TB, path, name string) string {
	t.Helper()
	src := filepath.Join(b.BinDir(), name)
	if filepath.Clean(path) == src {
		return src
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.MkdirAll(b.BinDir(), 0o755)
	}
	if err == nil {
		err = safefile.Write(src, data, 0o755)
	}
	if err != nil {
		t.Fatalf("testbed: install %s: %v", name, err)
	}
	return src
}

// place links the staged program src into every host that is not bare.
func (b *Bed) place(t testing.TB, src string) {
	t.Helper()
	if err := b.placeEverywhere(src); err != nil {
		t.Fatalf("testbed: install %s: %v", filepath.Base(src), err)
	}
}

// placeEverywhere links src into every host's /usr/local/bin but the bare
// ones'.
func (b *Bed) placeEverywhere(src string) error {
	for _, h := range b.hosts {
		if b.isBare(h) {
			continue
		}
		if err := linkInto(src, b.HostBinDir(h)); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	return nil
}

func (b *Bed) isBare(h Host) bool {
	_, err := os.Lstat(filepath.Join(b.hostDir(h), bareMark))
	return err == nil
}

// tmpSeq makes the temporary names of concurrent installs distinct.
var tmpSeq atomic.Int64

// linkInto places src in dir under its base name: a hard link to a
// temporary name (a copy when the link fails), renamed over the old entry.
func linkInto(src, dir string) error {
	name := filepath.Base(src)
	dst := filepath.Join(dir, name)
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if di, err := os.Stat(dst); err == nil && os.SameFile(si, di) {
		return nil // a rename of two links to one file would do nothing
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp.%d.%d", name, os.Getpid(), tmpSeq.Add(1)))
	if err := os.Link(src, tmp); err != nil {
		data, rerr := os.ReadFile(src)
		if rerr != nil {
			return rerr
		}
		if werr := safefile.Write(tmp, data, 0o755); werr != nil {
			return fmt.Errorf("link %s: %v; copy: %w", src, err, werr)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WithoutStado makes h bare for the rest of t: no /usr/local/bin/stado
// (whatever it was: the installed binary or a bootstrap's link), no
// stado.service (stopped, disabled, its file and drop-ins removed), an empty
// /var/lib/stado; InstallStado and InstallBin skip h meanwhile. When t ends
// it clears the same again (what the test installed goes too) and links the
// stado of BinDir back in. Only a test that does not call t.Parallel may use
// it: the other journeys expect stado on every host.
func (b *Bed) WithoutStado(t testing.TB, h Host) {
	t.Helper()
	mark := filepath.Join(b.hostDir(h), bareMark)
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatalf("testbed: %s without stado: %v", h.Name, err)
	}
	t.Cleanup(func() {
		if err := b.clearStado(h); err != nil {
			t.Errorf("testbed: %s: restore stado: %v", h.Name, err)
		}
		os.Remove(mark)
		src := filepath.Join(b.BinDir(), "stado")
		if _, err := os.Stat(src); err == nil {
			if err := linkInto(src, b.HostBinDir(h)); err != nil {
				t.Errorf("testbed: %s: restore stado: %v", h.Name, err)
			}
		}
	})
	if err := b.clearStado(h); err != nil {
		t.Fatalf("testbed: %s without stado: %v", h.Name, err)
	}
}

// clearStado removes from h what a stado install leaves: stado.service
// (stopped and disabled first), everything under /var/lib/stado and
// /usr/local/bin/stado.
func (b *Bed) clearStado(h Host) error {
	ctx := context.Background()
	// errors ignored: the unit may be unknown to h's systemd
	_, _, _ = b.Exec(ctx, h, "systemctl", "disable", "--now", stadoUnit)
	sys := filepath.Join(b.hostDir(h), "fs", "etc-systemd", "system")
	for _, p := range []string{filepath.Join(sys, stadoUnit), filepath.Join(sys, stadoUnit+".d")} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if _, _, err := b.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
		return err
	}
	_, _, _ = b.Exec(ctx, h, "systemctl", "reset-failed", stadoUnit)
	dir := b.HostStadoDir(h)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(b.HostBinDir(h), "stado")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
