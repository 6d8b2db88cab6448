package units

import (
	"net"
	"sort"
	"strings"
)

// Port states of a unit's directory port.
const (
	PortOwned     = "owned"     // the unit's processes listen on the declared port and address
	PortElsewhere = "elsewhere" // something else listens there (another process or unit)
	PortFree      = "free"      // nothing listens on the declared port and address
)

// PortOwnership says whether unit owns the declared address's port from
// the listeners on that port: owned when a listener on the address (or on
// every address) belongs to the unit's processes, elsewhere when only
// others listen there, free when nothing does. It returns the listeners on
// the address.
func PortOwnership(unit, address string, ls []Listener) (string, []Listener) {
	var on []Listener
	for _, l := range ls {
		if AddressCovers(l.Address, address) {
			on = append(on, l)
		}
	}
	sort.SliceStable(on, func(i, j int) bool { return on[i].Unit == unit && on[j].Unit != unit })
	switch {
	case len(on) == 0:
		return PortFree, nil
	case on[0].Unit == unit:
		return PortOwned, on
	default:
		return PortElsewhere, on
	}
}

// AddressCovers reports whether a socket listening on listen accepts
// connections to declared: the same address, a wildcard listener, or a
// declared address that is not an IP (a name; any listener counts).
func AddressCovers(listen, declared string) bool {
	l := net.ParseIP(trimBrackets(listen))
	d := net.ParseIP(trimBrackets(declared))
	switch {
	case declared == "" || d == nil:
		return true
	case l == nil:
		return false
	case l.IsUnspecified():
		return true
	default:
		return l.Equal(d)
	}
}

func trimBrackets(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// LastLogLine is the message of the last journal line (short-iso form:
// "TIME HOST PROGRAM[PID]: MESSAGE"), or the last line as it is.
func LastLogLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "-- ") {
			continue
		}
		if f := strings.SplitN(l, " ", 3); len(f) == 3 {
			if _, msg, ok := strings.Cut(f[2], ": "); ok && strings.Contains(f[2][:strings.Index(f[2], ": ")], "[") {
				return msg
			}
		}
		return l
	}
	return ""
}
