package units

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// The units of files and of this host as `host unit` reads them: a unit
// file parsed from disk, a declaration rendered from a registry document
// file, a loaded unit shown.

// usage refuses a wrong request with code usage (exit 2).
func usage(format string, args ...any) error {
	return &refusal.Error{Code: refusal.Usage, Message: fmt.Sprintf(format, args...)}
}

// ParseFileAt reads the systemd unit file (with the *.conf drop-ins of
// dropinDir, default file.d) or property list file into a declaration.
// With instance set, file is a systemd template (NAME@.service) read as
// its instance NAME@INSTANCE.service; an instance that makes no valid unit
// name, of a file that is not a template or is a property list, is
// refused with code usage.
func ParseFileAt(file, dropinDir, instance string) (Parsed, error) {
	unit := ""
	if instance != "" {
		base := filepath.Base(file)
		if !IsTemplate(base) {
			return Parsed{}, usage("--instance reads a template (NAME@.service); %s is not one", base)
		}
		unit = InstanceName(base, instance)
		if err := declaration.CheckUnitName(registry.OSLinux, unit); err != nil || strings.Count(instance, "@") > 0 {
			return Parsed{}, usage("--instance %q does not make a systemd unit name: %s", instance, unit)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Parsed{}, fmt.Errorf("read %s: %w", file, err)
	}
	if unit != "" && IsPlist(data) {
		return Parsed{}, usage("--instance reads a systemd template; %s is a property list", file)
	}
	var dropins []DropIn
	if !IsPlist(data) {
		if dropins, err = ReadDropInFiles(file, dropinDir); err != nil {
			return Parsed{}, err
		}
	}
	path := file
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return ParseUnit(path, unit, data, dropins)
}

// Comments are the lines printed above a parsed declaration: complete or
// every blocker, and a guessed scope.
func (p Parsed) Comments() []string {
	var out []string
	if p.Complete {
		out = append(out, "# complete: ensure can reinstall this unit from the declaration")
	} else {
		out = append(out, fmt.Sprintf("# incomplete: %d blocker(s); each would have to change for the unit to be adoptable", len(p.Blockers)))
		for _, b := range p.Blockers {
			out = append(out, "#   "+b.String())
		}
	}
	if p.ScopeGuess != "" {
		out = append(out, "# scope: "+p.ScopeGuess)
	}
	return out
}

// RenderFromFile renders exactly the unit ensure would write for service
// (a name or unit identity) as the registry document file declares it on
// target host (every target when empty), for goos (default: the target's
// OS). Only a document the registry would accept is rendered.
func RenderFromFile(file, host, service, goos, home string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read registry %s: %w", file, err)
	}
	doc, err := registry.Parse(data, file)
	if err != nil {
		return nil, err
	}
	if err := registry.Validate(doc); err != nil {
		return nil, err
	}
	found, svc, err := doc.FindService(host, service)
	if err != nil {
		return nil, err
	}
	if goos == "" {
		goos = found.OS
	}
	return Render(*svc, goos, home)
}

// ShowLoaded is m's verdict on unit, refused (not_found) when the init
// system does not hold it.
func ShowLoaded(ctx context.Context, m Manager, unit string) (Verdict, error) {
	v, err := m.Show(ctx, unit)
	if err == nil && v.State == StateMissing {
		return v, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("unit %s is not loaded on this host", unit),
			Hint: "stado host unit parse FILE reads a unit file that is not loaded", Err: &NotLoadedError{Unit: unit}}
	}
	return v, err
}
