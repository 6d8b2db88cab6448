package local

import (
	"context"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
)

// ReleaseActivate implements channel.Host. (Being built: release/hostend.)
func (h *Host) ReleaseActivate(ctx context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	return release.ActivateResult{}, refusal.New(refusal.InvalidContent, "release activation is not built yet")
}

// ReleaseState implements channel.Host. (Being built: release/hostend.)
func (h *Host) ReleaseState(ctx context.Context, req release.StateRequest) (release.StateResult, error) {
	return release.StateResult{}, refusal.New(refusal.InvalidContent, "release state is not built yet")
}
