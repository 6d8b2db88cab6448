package declaration

// Scope values of a service.
const (
	ScopeSystem = "system"
	ScopeUser   = "user"
)

// OS values of a target.
const (
	OSLinux  = "linux"
	OSDarwin = "darwin"
)

// Service is one declaration: a unit stado keeps running on its target.
type Service struct {
	// Name is what the CLI addresses the service by; unique per target.
	Name string `yaml:"name" json:"name"`
	// Unit is the native identity: a systemd unit name on linux
	// ("brama.service"), a launchd label on darwin ("com.wisent.brama").
	Unit string `yaml:"unit" json:"unit"`
	// UnitPath is the absolute path of the unit file on the host; empty
	// means the default for the OS, scope and unit.
	UnitPath string `yaml:"unit_path,omitempty" json:"unit_path,omitempty"`
	// Program is the absolute executable path. Without it the declaration
	// is incomplete: it cannot be rendered or reinstalled.
	Program string   `yaml:"program,omitempty" json:"program,omitempty"`
	Args    []string `yaml:"args,omitempty" json:"args,omitempty"`
	// SecretArgs are indexes into Args (0-based) of arguments shown
	// masked, as env values are (Masked). They change nothing rendered:
	// the unit carries every argument as declared.
	SecretArgs []int             `yaml:"secret_args,omitempty" json:"secret_args,omitempty"`
	Env        map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Scope is "system" (default) or "user".
	Scope string `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Product names the catalog entry the service is an instance of.
	Product string `yaml:"product,omitempty" json:"product,omitempty"`
	// KeepAlive asks the supervisor to restart the program whenever it
	// exits; nil means true.
	KeepAlive *bool `yaml:"keep_alive,omitempty" json:"keep_alive,omitempty"`
	// IncompleteReason records why an adopted unit could not be represented
	// by program and args; only meaningful when Program is empty.
	IncompleteReason string `yaml:"incomplete_reason,omitempty" json:"incomplete_reason,omitempty"`
	// UnitSettings: what real units carry beyond program, args and env
	// (unitsettings.go); their keys sit beside the fields above.
	UnitSettings `yaml:",inline"`
	// Protocol, when set, names a service-protocol executable whose status
	// and ready the host pass reads as evidence (protocol.go).
	Protocol *ServiceProtocol `yaml:"protocol,omitempty" json:"protocol,omitempty"`
}

// Incomplete reports whether the declaration names a unit but carries no
// program, so it cannot be reinstalled from the document alone.
func (s Service) Incomplete() bool { return s.Program == "" }

// KeepsAlive reports the effective keep-alive setting (default true).
func (s Service) KeepsAlive() bool { return s.KeepAlive == nil || *s.KeepAlive }

// EffectiveScope returns the scope with its default applied.
func (s Service) EffectiveScope() string {
	if s.Scope == "" {
		return ScopeSystem
	}
	return s.Scope
}

// Mask is what a masked environment value or secret argument reads as.
const Mask = "********"

// Masked returns a copy of s to show: unless show is set, every env value
// and every argument named by SecretArgs reads as Mask. s is not changed
// (Args and Env are copied when masked); nil stays nil. Rendering must
// use the declaration itself, never this copy.
func (s Service) Masked(show bool) Service {
	if show {
		return s
	}
	if s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k := range s.Env {
			env[k] = Mask
		}
		s.Env = env
	}
	if len(s.SecretArgs) > 0 && len(s.Args) > 0 {
		args := append([]string(nil), s.Args...)
		for _, i := range s.SecretArgs {
			if i >= 0 && i < len(args) {
				args[i] = Mask
			}
		}
		s.Args = args
	}
	return s
}
