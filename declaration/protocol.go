package declaration

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ServiceProtocol names an executable speaking Oarbank's service protocol 1
// for a declared service. The host pass runs its status and ready
// operations (fingerprint for a probe) every PeriodSeconds and carries what
// they say in the beacon, beside the unit's own state.
type ServiceProtocol struct {
	// Exec is the argv of the executable; the operation is appended.
	Exec []string `yaml:"exec" json:"exec"`
	// PeriodSeconds is the time between two reads; 0 means
	// DefaultProtocolPeriod.
	PeriodSeconds int `yaml:"period_seconds,omitempty" json:"period_seconds,omitempty"`
	// Probe says the executable implements only fingerprint.
	Probe bool `yaml:"probe,omitempty" json:"probe,omitempty"`
	// Module is the module's short name (OARBANK_MODULE); empty means the
	// directory after "modules" in Exec[0]'s path, else the service's name.
	Module string `yaml:"module,omitempty" json:"module,omitempty"`
	// Bundle is the module bundle's root, the operation's cwd; empty means
	// the .../modules/<module> directory Exec[0] lies in, else Exec[0]'s
	// directory (its parent when that is named bin).
	Bundle string `yaml:"bundle,omitempty" json:"bundle,omitempty"`
	// ModuleData is the module's data directory on the node
	// (OARBANK_MODULE_DATA); empty means DefaultModuleDataRoot/<module>.
	ModuleData string `yaml:"module_data,omitempty" json:"module_data,omitempty"`
	// SettingsFile, ToolsFile and LimitsFile are the JSON files the
	// protocol names (OARBANK_SETTINGS_FILE, OARBANK_TOOLS_FILE,
	// OARBANK_LIMITS_FILE); empty means settings.json, tools.json and
	// limits.json in the module's data directory.
	SettingsFile string `yaml:"settings_file,omitempty" json:"settings_file,omitempty"`
	ToolsFile    string `yaml:"tools_file,omitempty" json:"tools_file,omitempty"`
	LimitsFile   string `yaml:"limits_file,omitempty" json:"limits_file,omitempty"`
}

// DefaultModuleDataRoot holds a module's data directory when the
// declaration names none: the agent's OARBANK_HOME default with data/.
const DefaultModuleDataRoot = "/var/lib/oarbank/data"

// ModuleName is the module's short name for the service named service.
func (p *ServiceProtocol) ModuleName(service string) string {
	if p.Module != "" {
		return p.Module
	}
	if m, _ := p.modulesDir(); m != "" {
		return m
	}
	return service
}

// BundleRoot is the directory operations run in.
func (p *ServiceProtocol) BundleRoot() string {
	if p.Bundle != "" {
		return p.Bundle
	}
	if _, root := p.modulesDir(); root != "" {
		return root
	}
	if len(p.Exec) == 0 {
		return "/"
	}
	dir := path.Dir(p.Exec[0])
	if path.Base(dir) == "bin" {
		dir = path.Dir(dir)
	}
	return dir
}

// DataDir is the module's data directory for the service named service.
func (p *ServiceProtocol) DataDir(service string) string {
	if p.ModuleData != "" {
		return p.ModuleData
	}
	return path.Join(DefaultModuleDataRoot, p.ModuleName(service))
}

// Files are the settings, tools and limits files for the service named
// service, each the declared one or its default in DataDir.
func (p *ServiceProtocol) Files(service string) (settings, tools, limits string) {
	or := func(v, name string) string {
		if v != "" {
			return v
		}
		return path.Join(p.DataDir(service), name)
	}
	return or(p.SettingsFile, "settings.json"), or(p.ToolsFile, "tools.json"), or(p.LimitsFile, "limits.json")
}

// modulesDir finds ".../modules/<m>/..." in Exec[0]: the module and the
// bundle root, or "" when Exec[0] lies in no modules directory.
func (p *ServiceProtocol) modulesDir() (module, root string) {
	if len(p.Exec) == 0 {
		return "", ""
	}
	parts := strings.Split(p.Exec[0], "/")
	for i := len(parts) - 3; i >= 1; i-- {
		if parts[i] == "modules" && parts[i+1] != "" {
			return parts[i+1], strings.Join(parts[:i+2], "/")
		}
	}
	return "", ""
}

// DefaultProtocolPeriod is the period of a protocol read when the
// declaration gives none, in seconds.
const DefaultProtocolPeriod = 30

// Period returns the period with its default applied.
func (p *ServiceProtocol) Period() int {
	if p.PeriodSeconds <= 0 {
		return DefaultProtocolPeriod
	}
	return p.PeriodSeconds
}

// protocol validates a service's protocol block at path p.
func (v *validator) protocol(sp *ServiceProtocol, p string) {
	if sp == nil {
		return
	}
	p += ".protocol"
	if len(sp.Exec) == 0 {
		v.add(p+".exec", "missing; the protocol executable's argv")
	}
	for i, a := range sp.Exec {
		ap := p + ".exec[" + strconv.Itoa(i) + "]"
		if i == 0 {
			if msg := PathProblem(a); msg != "" {
				v.add(ap, "%s", msg)
			}
			continue
		}
		if msg := ArgProblem(a); msg != "" {
			v.add(ap, "%s", msg)
		}
	}
	if sp.Module != "" {
		if msg := ArgProblem(sp.Module); msg != "" || strings.Contains(sp.Module, "/") {
			v.add(p+".module", "must be a module's short name (no '/', NUL or newline), got %q", sp.Module)
		}
	}
	for _, f := range []struct{ key, val string }{{"bundle", sp.Bundle}, {"module_data", sp.ModuleData},
		{"settings_file", sp.SettingsFile}, {"tools_file", sp.ToolsFile}, {"limits_file", sp.LimitsFile}} {
		if f.val == "" {
			continue
		}
		if msg := PathProblem(f.val); msg != "" {
			v.add(p+"."+f.key, "%s", msg)
		}
	}
	if sp.PeriodSeconds < 0 || sp.PeriodSeconds > 86400 {
		v.add(p+".period_seconds", "%s", fmt.Sprintf("must be 0 (default %d) to 86400, got %d", DefaultProtocolPeriod, sp.PeriodSeconds))
	}
}
