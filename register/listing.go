package register

// Listing is a register as `service recoveries` reads it on this machine:
// its file and its rows of one service (all when Service is empty),
// oldest first.
type Listing struct {
	File       string     `json:"file"`
	Service    string     `json:"service,omitempty"`
	Recoveries []Recovery `json:"recoveries"`
}

// Select lists the rows rs of the register file that are service's (all
// when service is empty).
func Select(file, service string, rs []Recovery) Listing {
	l := Listing{File: file, Service: service, Recoveries: []Recovery{}}
	for _, r := range rs {
		if service == "" || r.Service == service {
			l.Recoveries = append(l.Recoveries, r)
		}
	}
	return l
}

// Lines are the text form: each row as the register shows it, or that
// the file holds none.
func (l Listing) Lines() []string {
	if len(l.Recoveries) == 0 {
		return []string{"no recoveries in " + l.File}
	}
	var out []string
	for _, r := range l.Recoveries {
		out = append(out, r.RegisterLines()...)
	}
	return out
}
