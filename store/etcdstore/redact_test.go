package etcdstore

import (
	"strings"
	"testing"
)

// No form of an etcd URL lets its password into a parse error or into the
// redacted URL that wraps store-open errors.
func TestEtcdPasswordNeverReachesAnErrorOrTheRedactedURL(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		leaks     []string
	}{
		// a '/' in the password splits the URL at the wrong place
		{"slash", "etcd://alice:pa/Zq9x@127.0.0.1:2379/p", []string{"pa/Zq9x", "Zq9x"}},
		// a '?' in the password starts a query early
		{"question mark", "etcd://alice:pa?Zq9x@127.0.0.1:2379/p", []string{"pa?Zq9x", "Zq9x"}},
		// a '#' and an '@' in the password
		{"hash and at", "etcd://alice:p#W@Zq9x@127.0.0.1:2379/p", []string{"p#W", "Zq9x"}},
		// a refused password= option echoes nothing
		{"password option", "etcd://127.0.0.1:2379/p?password=hunter2", []string{"hunter2"}},
		// a plain password, with another error later in the URL
		{"plain password, bad port", "etcd://alice:plainpw@127.0.0.1:99999/p", []string{"plainpw"}},
		// a password and an unknown option carrying it again
		{"unknown option", "etcd://alice:s3cret@127.0.0.1:2379/p?bogus=s3cret", []string{"s3cret"}},
		// a percent-encoded password: neither spelling leaks
		{"escaped", "etcd://alice:pa%2FZq9x@127.0.0.1:2379/p?tls=maybe", []string{"pa%2FZq9x", "Zq9x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			red := Redact(tc.url)
			_, err := ParseURL(tc.url, func(string) string { return "" })
			for _, leak := range tc.leaks {
				if strings.Contains(red, leak) {
					t.Errorf("Redact(%q) = %q leaks %q", tc.url, red, leak)
				}
				if err != nil && strings.Contains(err.Error(), leak) {
					t.Errorf("ParseURL(%q) error %q leaks %q", tc.url, err, leak)
				}
			}
		})
	}
}
