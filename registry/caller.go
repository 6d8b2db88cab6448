package registry

import (
	"fmt"
	"os"

	"github.com/wisent/stado/refusal"
)

// ThisTarget is the registry target a process on this machine acts as:
// name, or the hostname; refused (validation) when it is not a valid
// target name.
func ThisTarget(name string) (string, error) {
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("read hostname: %w", err)
		}
		name = h
	}
	if !ValidTargetName(name) {
		return "", refusal.New("validation", "host name %q is not a valid target name", name)
	}
	return name, nil
}
