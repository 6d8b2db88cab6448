package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wisent/stado/refusal"
)

// Stage names where a call to a host failed.
type Stage string

const (
	StageConnect       Stage = "connect"        // TCP, key exchange, or the connection dropped
	StageHostKey       Stage = "host_key"       // the host key was unknown, changed or revoked
	StageAuth          Stage = "auth"           // no identity, or the server accepted none
	StageRemoteRefusal Stage = "remote_refusal" // the remote program refused (exit 3, refusal document)
	StageRemoteExit    Stage = "remote_exit"    // the remote command exited nonzero otherwise
)

// RemoteError is a failed call to one host. Err is the cause: the SSH
// client's *sshclient.HostKeyError at StageHostKey, a *Refusal at
// StageRemoteRefusal (both carry a RefusalCode, so the CLI reports them as
// refusals), the transport error otherwise. ExitStatus and StderrTail are set
// at the remote stages.
type RemoteError struct {
	Host       string `json:"host"`
	Address    string `json:"address,omitempty"`
	Stage      Stage  `json:"stage"`
	ExitStatus int    `json:"exit_status,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	Err        error  `json:"-"`
	// Capabilities are what the host's refusal document advertised at
	// StageRemoteRefusal; nil when it advertised none (a stado older than
	// capabilities) or no document came.
	Capabilities []Capability `json:"-"`
}

// HostHas reports whether the host's refusal advertised c. A host that
// advertised nothing has no capability.
func (e *RemoteError) HostHas(c Capability) bool { return slices.Contains(e.Capabilities, c) }

func (e *RemoteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Host, strings.ReplaceAll(string(e.Stage), "_", " "))
	if e.Stage == StageRemoteExit {
		fmt.Fprintf(&b, " %d", e.ExitStatus)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.StderrTail != "" {
		fmt.Fprintf(&b, "\nstderr: %s", strings.ReplaceAll(e.StderrTail, "\n", "\nstderr: "))
	}
	return b.String()
}

func (e *RemoteError) Unwrap() error { return e.Err }

// MarshalJSON carries the cause's message and, when it has one, its code.
func (e *RemoteError) MarshalJSON() ([]byte, error) {
	type plain RemoteError
	doc := struct {
		*plain
		Code    string `json:"code,omitempty"`
		Message string `json:"message"`
	}{plain: (*plain)(e), Message: e.Error()}
	var coded refusal.Coded
	if errors.As(e.Err, &coded) {
		doc.Code = string(coded.RefusalCode())
	}
	return json.Marshal(doc)
}
