package fleet

import (
	"context"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/register"
)

// RecoveriesResult is one host's recovery register as read over its
// channel (the recoveries verb): the rows the host itself reads with
// `stado service recoveries`, oldest first, keeping only Service's rows
// when it is set.
type RecoveriesResult struct {
	Host       string              `json:"host"`
	File       string              `json:"file,omitempty"`
	Service    string              `json:"service,omitempty"`
	Recoveries []register.Recovery `json:"recoveries"`
	Error      *HostError          `json:"error,omitempty"`
}

// Recoveries reads the recovery register of host (a registry target) in
// one channel call, changing nothing on it. A host that cannot be reached,
// or whose register cannot be read (register_unreadable, naming the file
// and line), is the returned error and the result's Error. Safe for
// concurrent use.
func (f *Fleet) Recoveries(ctx context.Context, host, service string) (RecoveriesResult, error) {
	res := RecoveriesResult{Host: host, Service: service, Recoveries: []register.Recovery{}}
	t, err := f.Target(host)
	if err != nil {
		return res, err
	}
	h, err := f.host(t)
	if err == nil {
		var rr channel.RecoveriesResult
		if rr, err = h.Recoveries(ctx); err == nil {
			res.File = rr.File
			for _, r := range rr.Recoveries {
				if service == "" || r.Service == service {
					res.Recoveries = append(res.Recoveries, r)
				}
			}
		}
	}
	if err != nil {
		res.Error = DescribeHostError(t.Name, err)
	}
	return res, err
}

// Lines are the text form: each recovery as the register shows it, or
// that the register holds none.
func (r RecoveriesResult) Lines() []string {
	if len(r.Recoveries) == 0 {
		return []string{register.None(r.File, r.Service) + " on " + r.Host}
	}
	var out []string
	for _, rec := range r.Recoveries {
		out = append(out, rec.RegisterLines()...)
	}
	return out
}
