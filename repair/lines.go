package repair

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wisent/stado/registry"
)

// Lines of `stado repair`: what runs (or ran) where, its argv, environment
// and bound, then its result once applied.
func (p *StepPlan) Lines() []string {
	verb := "would run"
	if p.Applied {
		verb = "ran"
	}
	out := []string{
		fmt.Sprintf("%s repair step %s for %s on %s (%s):", verb, p.Step, p.Service, p.Target, p.OS),
		"  argv:    " + registry.Words(p.Argv),
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		out = append(out, "  env:     "+k+"="+p.Env[k])
	}
	out = append(out, fmt.Sprintf("  timeout: %ds", p.Timeout))
	switch r := p.Report; {
	case r == nil:
		return append(out, "nothing ran; add --apply to run it")
	case r.OK:
		out = append(out, fmt.Sprintf("  result:  ok in %d ms", r.ElapsedMS))
	default:
		out = append(out, fmt.Sprintf("  result:  refused (%s): %s", r.Code, r.Refusal))
	}
	if p.Report.Output == "" {
		return out
	}
	for i, l := range strings.Split(p.Report.Output, "\n") {
		label := "  output:  "
		if i > 0 {
			label = "           " // under the first line of the output
		}
		out = append(out, label+l)
	}
	return out
}
