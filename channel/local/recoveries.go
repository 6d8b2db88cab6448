package local

import (
	"context"
	"errors"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
)

// Recoveries implements channel.Host: the register under Home, read as it
// is, never changed. A missing register holds no recovery; a register that
// cannot be read, or a line that is not a recovery, is refused
// (register_unreadable) naming the file and, for a line, its number.
func (h *Host) Recoveries(ctx context.Context) (channel.RecoveriesResult, error) {
	reg := register.Home(h.Home)
	res := channel.RecoveriesResult{File: reg.Path, Recoveries: []register.Recovery{}}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	recs, err := reg.Read()
	var fe *register.FileError
	if errors.As(err, &fe) {
		return res, refusal.New(refusal.RegisterUnreadable, "%v", err)
	}
	if err != nil { // a *register.LineError, already a register_unreadable refusal
		return res, err
	}
	res.Recoveries = append(res.Recoveries, recs...)
	return res, nil
}
