package local

import (
	"context"

	"github.com/wisent/stado/channel"
)

// Verify implements channel.Host.
func (h *Host) Verify(ctx context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	return channel.VerifyResult{}, nil
}
