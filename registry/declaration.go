package registry

import "github.com/wisent/stado/declaration"

// One service's declaration, its unit grammar and its validation are
// declaration's. The document holds services under these names, so that a
// reader of the document meets registry.Service beside registry.Target;
// they are the same types, not copies.
type (
	// Service is declaration.Service: one declared service of a target.
	Service = declaration.Service
	// UnitSettings is declaration.UnitSettings: what a unit carries beyond
	// program, arguments and environment.
	UnitSettings = declaration.UnitSettings
	// Violation is declaration.Violation; in a *ValidationError its path
	// runs from the document's root.
	Violation = declaration.Violation
)

// Scope values of a service, and OS values of a target (declaration's).
const (
	ScopeSystem = declaration.ScopeSystem
	ScopeUser   = declaration.ScopeUser
	OSLinux     = declaration.OSLinux
	OSDarwin    = declaration.OSDarwin
)
