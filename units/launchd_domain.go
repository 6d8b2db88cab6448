package units

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// launchctl's words for a domain that is not there. A gui/<uid> domain
// exists only while that user is logged in to the graphical session:
// without one, launchctl refuses a service target of the domain with
// "Could not find domain for user gui: <uid>", and on a host where only
// the background session exists (a login over ssh) with "Domain does not
// support specified action" (exit 125). testdata/launchctl keeps both as
// published.
var launchdDomainAbsent = [][]byte{
	[]byte("Could not find domain for"),
	[]byte("Domain does not support specified action"),
}

// domainDown returns the refusal of a launchctl output that says l's
// domain is not there, or nil. The system domain is always there.
func (l *Launchd) domainDown(out []byte) *UserManagerDownError {
	if l.Domain == "system" {
		return nil
	}
	for _, w := range launchdDomainAbsent {
		if bytes.Contains(out, w) {
			uid := -1
			if rest, ok := strings.CutPrefix(l.Domain, "gui/"); ok {
				if n, err := strconv.Atoi(rest); err == nil {
					uid = n
				}
			}
			user := l.User
			if user == "" {
				user = "uid " + strconv.Itoa(uid)
			}
			return &UserManagerDownError{User: user, UID: uid, Manager: "launchd",
				Reason: fmt.Sprintf("launchd holds no %s domain, which exists only while %s is logged in to the graphical session (launchctl: %s)", l.Domain, user, firstLine(out))}
		}
	}
	return nil
}
