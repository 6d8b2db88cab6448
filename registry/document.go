package registry

// Document is the registry document: what the owner declared for the fleet.
// It is stored as one object (see RegistryKey) and changed only through
// Update or a validated compare-and-swap.
type Document struct {
	// Version is the document format version; only 1 is understood.
	Version int `yaml:"version" json:"version"`
	// ServiceResolver holds the settings every resolver and host process
	// applies, among them the bound after which a request stands.
	ServiceResolver ServiceResolver `yaml:"service_resolver" json:"service_resolver"`
	Autonomy        Autonomy        `yaml:"autonomy,omitempty" json:"autonomy,omitzero"` // the autonomy cycle's authorization and caps (autonomy.go)
	// Directory says where each service answers: one entry per (service,
	// host), each with its own callers.
	Directory []DirectoryEntry `yaml:"directory,omitempty" json:"directory,omitempty"`
	// Targets are the hosts of the fleet, each with its declared services.
	Targets []Target `yaml:"targets" json:"targets"`
	// Releases declares, per product, the version every target should run
	// (a target's own Releases entry overrides it; releases.go).
	Releases map[string]ReleaseDecl `yaml:"releases,omitempty" json:"releases,omitempty"`
}

// ServiceResolver carries the resolver settings of the fleet.
type ServiceResolver struct {
	// RefreshSeconds is the directory refresh interval, also the bound after
	// which an unanswered request is standing. Zero means not declared.
	RefreshSeconds int `yaml:"refresh_seconds,omitempty" json:"refresh_seconds,omitempty"`
}

// DirectoryEntry says where one host's copy of a service answers (host,
// address and port) and which hosts may call it through
// stado://service/<name>. A service running on several hosts has one entry
// per host.
type DirectoryEntry struct {
	Service string `yaml:"service" json:"service"`
	Host    string `yaml:"host" json:"host"`
	// Address is the address the service listens on, loopback included;
	// empty means the target's SSH address (or its name).
	Address string `yaml:"address,omitempty" json:"address,omitempty"`
	Port    int    `yaml:"port" json:"port"`
	// Callers lists target names allowed to call the service; empty means
	// every target of the fleet.
	Callers []string `yaml:"callers,omitempty" json:"callers,omitempty"`
}

// Target is one host of the fleet.
type Target struct {
	Name string `yaml:"name" json:"name"`
	SSH  SSH    `yaml:"ssh" json:"ssh"`
	// OS is "linux" or "darwin".
	OS string `yaml:"os" json:"os"`
	// LaunchdDomain is "system" or "gui/<uid>" on darwin; empty on linux.
	LaunchdDomain string `yaml:"launchd_domain,omitempty" json:"launchd_domain,omitempty"`
	// Alerts are the channels a recovery attempt on this host is reported to.
	Alerts   []AlertChannel `yaml:"alerts,omitempty" json:"alerts,omitempty"`
	Services []Service      `yaml:"services,omitempty" json:"services,omitempty"`
	// Releases overrides the document's declared versions on this target.
	Releases map[string]ReleaseDecl `yaml:"releases,omitempty" json:"releases,omitempty"`
}

// SSH is how the write half reaches a target.
type SSH struct {
	// Address is a host name or IP address; empty means the target name.
	Address string `yaml:"address,omitempty" json:"address,omitempty"`
	// Port defaults to 22 when zero.
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// User defaults to root when empty.
	User string `yaml:"user,omitempty" json:"user,omitempty"`
}

// AlertChannel is one place an alert is delivered: a webhook or a command.
// Exactly one of Webhook and Command is set.
type AlertChannel struct {
	Name    string        `yaml:"name" json:"name"`
	Webhook *WebhookAlert `yaml:"webhook,omitempty" json:"webhook,omitempty"`
	Command *CommandAlert `yaml:"command,omitempty" json:"command,omitempty"`
}

// WebhookAlert posts the alert as JSON to URL.
type WebhookAlert struct {
	URL string `yaml:"url" json:"url"`
}

// CommandAlert runs Argv (no shell) with the alert as JSON on stdin.
type CommandAlert struct {
	Argv []string `yaml:"argv" json:"argv"`
}

// Target returns the target named name, or false.
func (d *Document) Target(name string) (*Target, bool) {
	for i := range d.Targets {
		if d.Targets[i].Name == name {
			return &d.Targets[i], true
		}
	}
	return nil, false
}

// Service returns the service of t addressed by name or by unit identity.
func (t *Target) Service(nameOrUnit string) (*Service, bool) {
	for i := range t.Services {
		if t.Services[i].Name == nameOrUnit {
			return &t.Services[i], true
		}
	}
	for i := range t.Services {
		if t.Services[i].Unit == nameOrUnit {
			return &t.Services[i], true
		}
	}
	return nil, false
}

// DirectoryEntries returns every directory entry of service, in document
// order: one per host the service answers on.
func (d *Document) DirectoryEntries(service string) []*DirectoryEntry {
	var out []*DirectoryEntry
	for i := range d.Directory {
		if d.Directory[i].Service == service {
			out = append(out, &d.Directory[i])
		}
	}
	return out
}

// DirectoryEntryOn returns the directory entry of service on host, or false.
func (d *Document) DirectoryEntryOn(service, host string) (*DirectoryEntry, bool) {
	for i := range d.Directory {
		if e := &d.Directory[i]; e.Service == service && e.Host == host {
			return e, true
		}
	}
	return nil, false
}

// ListenAddress returns the address e's service listens on: its own
// address when declared, else its target's SSH address, else the host name.
func (d *Document) ListenAddress(e *DirectoryEntry) string {
	if e.Address != "" {
		return e.Address
	}
	if t, ok := d.Target(e.Host); ok && t.SSH.Address != "" {
		return t.SSH.Address
	}
	return e.Host
}
