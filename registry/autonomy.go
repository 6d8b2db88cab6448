package registry

import "math"

// Autonomy modes. Report plans and changes nothing; enforce may act, and
// only when the command that runs the cycle asks for it as well.
const (
	AutonomyReport  = "report"
	AutonomyEnforce = "enforce"
)

// Autonomy is the document's authorization of the autonomy cycle (stado
// optimize run) and the ceilings of its blast radius. It sits in the
// registry so that every change to it is a recorded, audited revision. The
// zero value authorizes report mode only, with the cycle's defaults.
type Autonomy struct {
	// Mode is the most the cycle may do: "report" (the default when empty)
	// or "enforce".
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// MaxConcurrent caps how many hosts an enforcing cycle acts on at once;
	// zero means the cycle's default. A command line may ask for fewer.
	MaxConcurrent int `yaml:"max_concurrent,omitempty" json:"max_concurrent,omitempty"`
	// MaxFraction caps the share (0 < F <= 1) of one service's hosts acted
	// on at once; zero means the cycle's default.
	MaxFraction float64 `yaml:"max_fraction,omitempty" json:"max_fraction,omitempty"`
	// FailureBudget is how many failed actions end an enforcing cycle; zero
	// means the cycle's default.
	FailureBudget int `yaml:"failure_budget,omitempty" json:"failure_budget,omitempty"`
}

// EffectiveMode is the mode with its default applied.
func (a Autonomy) EffectiveMode() string {
	if a.Mode == "" {
		return AutonomyReport
	}
	return a.Mode
}

// Ceilings of the autonomy caps a document may declare.
const (
	MaxAutonomyConcurrent = 1000
	MaxAutonomyBudget     = 1000
)

// autonomy checks the document's autonomy section at "autonomy".
func (v *validator) autonomy(a *Autonomy) {
	const p = "autonomy"
	switch a.Mode {
	case "", AutonomyReport, AutonomyEnforce:
	default:
		v.add(p+".mode", "must be %q or %q, got %q", AutonomyReport, AutonomyEnforce, a.Mode)
	}
	if a.MaxConcurrent < 0 || a.MaxConcurrent > MaxAutonomyConcurrent {
		v.add(p+".max_concurrent", "must be between 1 and %d (0: the default), got %d", MaxAutonomyConcurrent, a.MaxConcurrent)
	}
	if math.IsNaN(a.MaxFraction) || a.MaxFraction < 0 || a.MaxFraction > 1 {
		v.add(p+".max_fraction", "must be greater than 0 and at most 1 (0: the default), got %v", a.MaxFraction)
	}
	if a.FailureBudget < 0 || a.FailureBudget > MaxAutonomyBudget {
		v.add(p+".failure_budget", "must be between 1 and %d (0: the default), got %d", MaxAutonomyBudget, a.FailureBudget)
	}
}
