package sshclient

import "strings"

// DialerFromEnv is the dialer of a process without flags (a host's `stado
// host run` reaching its peers): known_hosts, identities (comma-separated)
// and ssh_config from STADO_KNOWN_HOSTS, STADO_SSH_IDENTITY and
// STADO_SSH_CONFIG as getenv reads them, else the ~/.ssh defaults; host
// keys are always checked.
func DialerFromEnv(getenv func(string) string) *Dialer {
	var ids []string
	for _, id := range strings.Split(getenv("STADO_SSH_IDENTITY"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return &Dialer{KnownHostsPath: getenv("STADO_KNOWN_HOSTS"), IdentityFiles: ids, SSHConfigPath: getenv("STADO_SSH_CONFIG")}
}
