package repair

import (
	"context"
	"errors"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// PlanStepIn plans step (PlanStep) for service on target from the registry
// (none yet is no document) and the catalog st holds.
func PlanStepIn(ctx context.Context, st store.Store, service, target, step string) (*StepPlan, error) {
	doc, _, err := registry.Load(ctx, st)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		return nil, err
	}
	return PlanStep(doc, cat, service, target, step)
}

// ApplyVia runs the plan (Apply) on its target reached through connect.
func (p *StepPlan) ApplyVia(ctx context.Context, connect channel.Connector) error {
	return p.Apply(ctx, connect(*p.target))
}
