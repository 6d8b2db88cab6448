package store

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultURL is the store a command uses when neither --store nor
// STADO_STORE names one, for the user whose home is home: the URL written
// in home/.stado/store-url (so a host's channel program and its host
// process agree on one store without flags), else file://home/.stado/store.
func DefaultURL(home string) string {
	if b, err := os.ReadFile(filepath.Join(home, ".stado", "store-url")); err == nil {
		if u := strings.TrimSpace(string(b)); u != "" && !strings.ContainsAny(u, "\n\r") {
			return u
		}
	}
	return "file://" + filepath.Join(home, ".stado", "store")
}
