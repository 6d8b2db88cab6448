package fleet

import (
	"fmt"

	"github.com/wisent/stado/refusal"
)

// Outcome is the verdict of a verify sweep: a failure when a host could
// not be read, a refusal (needs_attention) when a service needs attention,
// else nil.
func (r *VerifyResult) Outcome() error {
	services, unreachable := r.Findings()
	switch {
	case unreachable > 0:
		return fmt.Errorf("service verify: %d of %d host(s) could not be read", unreachable, len(r.Hosts))
	case services > 0:
		return refusal.New(refusal.NeedsAttention, "service verify: %d service(s) need attention", services)
	}
	return nil
}
