package local

import (
	"context"
	"path/filepath"

	"github.com/wisent/stado/channel"
)

// Recoveries implements channel.Host: the register under Home, read as it
// is, never changed. A missing register holds no recovery.
func (h *Host) Recoveries(ctx context.Context) (channel.RecoveriesResult, error) {
	res := channel.RecoveriesResult{File: filepath.Join(h.Home, channel.RegisterFile), Recoveries: []channel.Recovery{}}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	recs, err := channel.ReadRegister(res.File)
	if err != nil {
		return res, err
	}
	res.Recoveries = append(res.Recoveries, recs...)
	return res, nil
}
