package register

import "fmt"

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

// None says that file holds no recoveries, naming the service filter when
// there is one (so an empty answer to a misspelt name says what it asked).
func None(file, service string) string {
	if service != "" {
		return fmt.Sprintf("no recoveries of service %q in %s", service, file)
	}
	return "no recoveries in " + file
}

// Lines are the text form: each row as the register shows it, or that
// the file holds none (of the service asked for).
func (l Listing) Lines() []string {
	if len(l.Recoveries) == 0 {
		return []string{None(l.File, l.Service)}
	}
	var out []string
	for _, r := range l.Recoveries {
		out = append(out, r.RegisterLines()...)
	}
	return out
}
