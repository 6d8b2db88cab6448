package units

import (
	"bytes"
	"io"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	"howett.net/plist"

	"github.com/wisent/stado/declaration"
)

// KeepsInstalledFields reports whether the writer of s's unit file keeps
// the fields of the installed file that s's rendering does not declare. It
// does for a catalog product (s.Product set: the stado host process, brama,
// ...), whose rendering states only what the catalog knows about the
// program, so that what an operator tuned on the host (LimitNOFILE=,
// MemoryMax=, a launchd SoftResourceLimits) survives each reinstall. A
// declaration of the operator's own document states the whole unit (adopt
// records every field), so its rendering replaces the file.
func KeepsInstalledFields(s declaration.Service) bool { return s.Product != "" }

// KeepInstalled returns rendered, s's unit rendered for goos, with every
// field of installed (the bytes of the unit file on the host; nil when
// there is none) that the rendering does not declare, when
// KeepsInstalledFields(s). A systemd directive the rendering declares is
// the rendering's alone (all its lines); one it does not declare is kept
// with every line the installed file gives it, at the end of its section,
// in the installed file's order. A launchd key is kept the same way at the
// top level of the property list. stado's own bookkeeping keys are never
// kept. rendered comes back unchanged when nothing is kept, when
// KeepsInstalledFields(s) is false, or when installed cannot be read as a
// unit of goos: the writer must still be able to replace a broken file. The
// result is deterministic, and keeping over its own output changes nothing.
func KeepInstalled(s declaration.Service, goos string, rendered, installed []byte) []byte {
	if !KeepsInstalledFields(s) || len(installed) == 0 {
		return rendered
	}
	if goos == declaration.OSDarwin {
		return keepPlist(rendered, installed)
	}
	return keepSystemd(rendered, installed)
}

// KeepInstalledAt is KeepInstalled with the installed file read from path
// on this host; an absent or unreadable file keeps nothing.
func KeepInstalledAt(s declaration.Service, goos, path string, rendered []byte) []byte {
	if !KeepsInstalledFields(s) {
		return rendered
	}
	installed, err := readBounded(path)
	if err != nil {
		return rendered // absent (nothing to keep) or unreadable (the write will say)
	}
	return KeepInstalled(s, goos, rendered, installed)
}

func bookkeepingKey(key string) bool {
	switch key {
	case systemdNameKey, systemdProductKey, plistNameKey, plistProductKey:
		return true
	}
	return false
}

func keepSystemd(rendered, installed []byte) []byte {
	have, err := lexUnit(rendered, "rendering")
	if err != nil {
		return rendered
	}
	old, err := lexUnit(installed, "installed")
	if err != nil {
		return rendered
	}
	declared := map[[2]string]bool{}
	for _, e := range have {
		declared[[2]string{e.section, e.key}] = true
	}
	kept := map[string][]entry{}
	var newSections []string
	sections := map[string]bool{}
	for _, e := range have {
		sections[e.section] = true
	}
	for _, e := range old {
		if declared[[2]string{e.section, e.key}] || bookkeepingKey(e.key) || checkValue("value", e.value) != nil {
			continue
		}
		if !sections[e.section] && len(kept[e.section]) == 0 {
			newSections = append(newSections, e.section)
		}
		kept[e.section] = append(kept[e.section], e)
	}
	if len(kept) == 0 {
		return rendered
	}
	var opts []*unit.UnitOption
	flush := func(section string) {
		for _, e := range kept[section] {
			opts = append(opts, unit.NewUnitOption(section, e.key, e.value))
		}
		delete(kept, section)
	}
	for i, e := range have {
		opts = append(opts, unit.NewUnitOption(e.section, e.key, e.value))
		if i == len(have)-1 || have[i+1].section != e.section {
			flush(e.section)
		}
	}
	for _, sec := range newSections {
		flush(sec)
	}
	out, err := io.ReadAll(unit.Serialize(opts))
	if err != nil {
		return rendered
	}
	return out
}

func keepPlist(rendered, installed []byte) []byte {
	var have, old map[string]any
	if _, err := plist.Unmarshal(rendered, &have); err != nil {
		return rendered
	}
	if _, err := plist.Unmarshal(installed, &old); err != nil {
		return rendered
	}
	n := 0
	for k, v := range old {
		if _, ok := have[k]; ok || bookkeepingKey(k) || strings.TrimSpace(k) == "" {
			continue
		}
		have[k] = v
		n++
	}
	if n == 0 {
		return rendered
	}
	var buf bytes.Buffer
	enc := plist.NewEncoderForFormat(&buf, plist.XMLFormat)
	enc.Indent("\t")
	if err := enc.Encode(have); err != nil {
		return rendered
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}
