// Command mkdeb renders the host unit `make install` ships and builds the
// Debian package `make package` ships, with nfpm (a library made for
// building .deb files: control file, md5sums, ar and tar layout). It is a
// build tool, not part of stado: it imports catalog (the shipped stado
// product) and units (its renderer, the one `stado host unit render` and
// ensure use), so the packaged unit is byte for byte the unit ensure would
// write for the stado product with the packaged program path. The binary,
// its man pages and its completion scripts come from the Makefile's stage
// (the built stado's own `__man` and `completion`).
//
//	mkdeb unit --program /usr/local/bin/stado
//	mkdeb deb --bin bin/stado --man build/man --completions build/completions \
//	    --version 1.2.3 --commit abc123 --arch amd64 --out dist
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/units"
)

// DefaultStore is the store the packaged unit names until the operator
// overrides STADO_STORE with a drop-in: a file store on the host itself.
const DefaultStore = "file:///var/lib/stado/store"

// Where the package puts things (Debian's paths; make install uses PREFIX).
const (
	debBin        = "/usr/bin/stado"
	debUnit       = "/usr/lib/systemd/system/stado.service"
	debBash       = "/usr/share/bash-completion/completions/stado"
	debZsh        = "/usr/share/zsh/vendor-completions/_stado"
	debFish       = "/usr/share/fish/vendor_completions.d/stado.fish"
	debManDir     = "/usr/share/man/man1"
	completionSrc = "stado" // bash; _stado is zsh's, stado.fish fish's
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "mkdeb: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: mkdeb unit|deb [flags]")
	}
	fs := flag.NewFlagSet("mkdeb "+args[0], flag.ContinueOnError)
	program := fs.String("program", debBin, "unit: the stado binary's path on the host")
	store := fs.String("store", DefaultStore, "unit: the STADO_STORE the unit sets")
	var o debOptions
	fs.StringVar(&o.Bin, "bin", "", "deb: the stado binary")
	fs.StringVar(&o.ManDir, "man", "", "deb: directory of the *.1 pages (stado __man)")
	fs.StringVar(&o.CompletionDir, "completions", "", "deb: directory holding stado, _stado and stado.fish")
	fs.StringVar(&o.Version, "version", "", "deb: the version stamped into the binary")
	fs.StringVar(&o.Commit, "commit", "", "deb: the commit stamped into the binary")
	fs.StringVar(&o.Arch, "arch", "amd64", "deb: GOARCH of the binary")
	fs.StringVar(&o.OutDir, "out", "dist", "deb: directory to write the .deb into")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "unit":
		u, err := renderUnit(*program, *store)
		if err != nil {
			return err
		}
		_, err = stdout.Write(u)
		return err
	case "deb":
		path, err := buildDeb(o)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, path)
		return err
	}
	return fmt.Errorf("unknown subcommand %q: want unit or deb", args[0])
}

// renderUnit renders the shipped catalog's stado product as a system
// service on linux with program as its binary and store as STADO_STORE.
func renderUnit(program, store string) ([]byte, error) {
	p, ok := catalog.Shipped().Lookup("stado")
	if !ok {
		return nil, fmt.Errorf("the shipped catalog has no stado product")
	}
	svc := p.Declaration("linux", "system")
	svc.Program = program
	if svc.Env == nil {
		svc.Env = map[string]string{}
	}
	svc.Env["STADO_STORE"] = store
	return units.Render(svc, "linux", "")
}

type debOptions struct {
	Bin, ManDir, CompletionDir string
	Version, Commit, Arch      string
	OutDir                     string
}

// buildDeb writes stado_VERSION_ARCH.deb into OutDir and returns its path.
// The package holds the binary, the host unit (not enabled: the operator
// names the fleet's store first), the completions and the man pages,
// gzipped as Debian keeps them.
func buildDeb(o debOptions) (string, error) {
	for name, v := range map[string]string{"--bin": o.Bin, "--man": o.ManDir, "--completions": o.CompletionDir, "--version": o.Version, "--commit": o.Commit} {
		if v == "" {
			return "", fmt.Errorf("%s is required", name)
		}
	}
	stage, err := os.MkdirTemp("", "mkdeb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)

	unit, err := renderUnit(debBin, DefaultStore)
	if err != nil {
		return "", err
	}
	unitFile := filepath.Join(stage, "stado.service")
	if err := os.WriteFile(unitFile, unit, 0o644); err != nil {
		return "", err
	}
	contents := files.Contents{
		{Source: o.Bin, Destination: debBin, FileInfo: &files.ContentFileInfo{Mode: 0o755}},
		{Source: unitFile, Destination: debUnit, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		{Source: filepath.Join(o.CompletionDir, completionSrc), Destination: debBash, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		{Source: filepath.Join(o.CompletionDir, "_stado"), Destination: debZsh, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		{Source: filepath.Join(o.CompletionDir, "stado.fish"), Destination: debFish, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
	}
	pages, err := filepath.Glob(filepath.Join(o.ManDir, "*.1"))
	if err != nil {
		return "", err
	}
	if len(pages) == 0 {
		return "", fmt.Errorf("no man pages in %s", o.ManDir)
	}
	sort.Strings(pages)
	for _, p := range pages {
		gz := filepath.Join(stage, filepath.Base(p)+".gz")
		if err := gzipFile(p, gz); err != nil {
			return "", err
		}
		contents = append(contents, &files.Content{Source: gz, Destination: debManDir + "/" + filepath.Base(gz), FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name:            "stado",
		Arch:            o.Arch,
		Platform:        "linux",
		Version:         o.Version,
		VersionMetadata: "git" + o.Commit,
		Section:         "admin",
		Priority:        "optional",
		Maintainer:      "stado maintainers <stado@localhost>",
		Description:     "keeps a fleet's long-running services the way their owner declared them",
		Homepage:        "https://github.com/wisent/stado",
		License:         "see /usr/share/doc/stado",
		Overridables:    nfpm.Overridables{Contents: contents, Recommends: []string{"systemd", "openssh-client"}},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("prepare package: %w", err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := deb.Default.Package(info, &buf); err != nil {
		return "", fmt.Errorf("build package: %w", err)
	}
	out := filepath.Join(o.OutDir, deb.Default.ConventionalFileName(info))
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return out, os.Rename(tmp, out)
}

// gzipFile writes src gzipped (best compression, no name or time in the
// header, so the same page gives the same bytes) to dst.
func gzipFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.ModTime = time.Time{}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
