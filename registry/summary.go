package registry

import "errors"

// Summary is a registry document as an operator reads it: every target
// with the SSH defaults applied (address: the target name, port 22, user
// root; an ssh_config may still change them when a connection is made),
// every service marked declared or declaration_incomplete.
type Summary struct {
	Targets   []TargetSummary  `json:"targets"`
	Directory []DirectoryEntry `json:"directory"`
	// Incomplete counts the declarations that cannot be reinstalled.
	Incomplete int `json:"incomplete"`
	// Releases are the versions declared for every target.
	Releases map[string]ReleaseDecl `json:"releases,omitempty"`
}

// TargetSummary is one target of a Summary.
type TargetSummary struct {
	Name          string           `json:"name"`
	Address       string           `json:"address"`
	Port          int              `json:"port"`
	User          string           `json:"user"`
	OS            string           `json:"os"`
	LaunchdDomain string           `json:"launchd_domain,omitempty"`
	Alerts        []string         `json:"alerts,omitempty"`
	Services      []ServiceSummary `json:"services"`
	// Releases are this target's own declared versions (overrides).
	Releases map[string]ReleaseDecl `json:"releases,omitempty"`
}

// ServiceSummary is one declaration of a TargetSummary.
type ServiceSummary struct {
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	UnitPath string `json:"unit_path,omitempty"`
	Program  string `json:"program,omitempty"`
	Scope    string `json:"scope"`
	Product  string `json:"product,omitempty"`
	// Status is StatusDeclared, or StatusIncomplete when there is no program.
	Status           string `json:"status"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
}

// Statuses of a ServiceSummary.
const (
	StatusDeclared   = "declared"
	StatusIncomplete = "declaration_incomplete"
)

// Summarize reads d as Summary describes; lists are empty, never nil.
func Summarize(d *Document) Summary {
	s := Summary{Targets: []TargetSummary{}, Directory: append([]DirectoryEntry{}, d.Directory...), Releases: cloneReleases(d.Releases)}
	for _, t := range d.Targets {
		ts := TargetSummary{Name: t.Name, Address: t.SSH.Address, Port: t.SSH.Port, User: t.SSH.User, OS: t.OS,
			LaunchdDomain: t.LaunchdDomain, Services: []ServiceSummary{}, Releases: cloneReleases(t.Releases)}
		if ts.Address == "" {
			ts.Address = t.Name
		}
		if ts.Port == 0 {
			ts.Port = 22
		}
		if ts.User == "" {
			ts.User = "root"
		}
		for _, a := range t.Alerts {
			ts.Alerts = append(ts.Alerts, a.Name)
		}
		for _, svc := range t.Services {
			ss := ServiceSummary{Name: svc.Name, Unit: svc.Unit, UnitPath: svc.UnitPath, Program: svc.Program,
				Scope: svc.EffectiveScope(), Product: svc.Product, Status: StatusDeclared}
			if svc.Incomplete() {
				ss.Status, ss.IncompleteReason = StatusIncomplete, svc.IncompleteReason
				s.Incomplete++
			}
			ts.Services = append(ts.Services, ss)
		}
		s.Targets = append(s.Targets, ts)
	}
	return s
}

// ReadDocument parses data (YAML or JSON) and validates the document, the
// way a document must be before it is pushed. Errors unwrap to ErrInvalid:
// a *ParseError, or a *ValidationError whose Source is source.
func ReadDocument(data []byte, source string) (*Document, error) {
	d, err := Parse(data, source)
	if err != nil {
		return nil, err
	}
	if err := Validate(d); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return nil, err
	}
	return d, nil
}
