package fleet

import (
	"fmt"
	"math"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// Caps bound the blast radius of an operation over many hosts: the
// autonomy cycle's enforcer and service converge share them.
type Caps struct {
	// MaxConcurrent is how many hosts are acted on at once.
	MaxConcurrent int `json:"max_concurrent"`
	// MaxFraction is the share of one service's hosts acted on at once;
	// at least one host of a service may always be acted on.
	MaxFraction float64 `json:"max_fraction"`
	// FailureBudget is how many failed actions stop the cycle; the actions
	// not yet started are recorded as not attempted.
	FailureBudget int `json:"failure_budget"`
}

// DefaultCaps are the caps when neither the registry nor the command
// names one: one host at a time, never more than a quarter of a service's
// hosts at once, and the first failed action ends the cycle.
var DefaultCaps = Caps{MaxConcurrent: 1, MaxFraction: 0.25, FailureBudget: 1}

// Requested is what a command line asks for; zero fields ask nothing.
type Requested struct {
	MaxConcurrent int
	MaxFraction   float64
	FailureBudget int
}

// ResolveCaps combines the registry's autonomy section (the ceiling; a
// field it leaves at zero is the default) with the command's request: a
// requested value at or under the ceiling is used, one above it is refused
// naming both, an unset one is the ceiling.
func ResolveCaps(a registry.Autonomy, req Requested) (Caps, error) {
	c := DefaultCaps
	if a.MaxConcurrent > 0 {
		c.MaxConcurrent = a.MaxConcurrent
	}
	if a.MaxFraction > 0 {
		c.MaxFraction = a.MaxFraction
	}
	if a.FailureBudget > 0 {
		c.FailureBudget = a.FailureBudget
	}
	switch {
	case req.MaxConcurrent < 0, req.FailureBudget < 0, req.MaxFraction < 0, req.MaxFraction > 1, math.IsNaN(req.MaxFraction):
		return c, refusal.New(refusal.Usage, "--max-concurrent and --failure-budget must be positive, --max-fraction in (0, 1]")
	case req.MaxConcurrent > c.MaxConcurrent:
		return c, ceiling("--max-concurrent", req.MaxConcurrent, "autonomy.max_concurrent", c.MaxConcurrent)
	case req.MaxFraction > c.MaxFraction:
		return c, ceiling("--max-fraction", req.MaxFraction, "autonomy.max_fraction", c.MaxFraction)
	case req.FailureBudget > c.FailureBudget:
		return c, ceiling("--failure-budget", req.FailureBudget, "autonomy.failure_budget", c.FailureBudget)
	}
	if req.MaxConcurrent > 0 {
		c.MaxConcurrent = req.MaxConcurrent
	}
	if req.MaxFraction > 0 {
		c.MaxFraction = req.MaxFraction
	}
	if req.FailureBudget > 0 {
		c.FailureBudget = req.FailureBudget
	}
	return c, nil
}

func ceiling(flag string, got any, field string, max any) error {
	return &refusal.Error{Code: refusal.NotAuthorized,
		Message: fmt.Sprintf("the command asks %s %v, above the registry's ceiling of %v", flag, got, max),
		Hint:    "raise " + field + " in the registry document (stado registry push) to authorize it"}
}

// PerService is how many of n hosts of one service may be acted on at once.
func (c Caps) PerService(n int) int {
	k := int(math.Floor(c.MaxFraction * float64(n)))
	return max(k, 1)
}
