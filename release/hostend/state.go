package hostend

import (
	"context"

	"github.com/wisent/stado/release"
)

// State reads the host's release state file and, for each product req
// names a unit of, that unit's main pid, its executable and whether it is
// the active image. A unit that cannot be read is reported with pid 0; a
// state file that cannot be read is the error. It writes nothing.
func (h *Host) State(ctx context.Context, req release.StateRequest) (release.StateResult, error) {
	st, err := release.ReadHostState(h.Root)
	if err != nil {
		return release.StateResult{}, err
	}
	res := release.StateResult{State: st}
	if len(req.Units) == 0 {
		return res, nil
	}
	res.Running = map[string]release.RunningImage{}
	for product, u := range req.Units {
		if err := checkProductPath(product); err != nil {
			return release.StateResult{}, err
		}
		r := release.RunningImage{Unit: u.Unit}
		if h.Init != nil {
			if v, err := h.Init.Show(ctx, u.Scope, u.Unit); err == nil && v.PID > 0 {
				r.PID = v.PID
			}
		}
		if r.PID > 0 && h.Exe != nil {
			if exe, err := h.Exe(ctx, u.Scope, u.Unit, r.PID); err == nil {
				r.Exe = exe
				if a := st.Products[product].Active; a != nil {
					r.OnActive = sameFile(exe, a.Path)
				}
			}
		}
		res.Running[product] = r
	}
	return res, nil
}
