package cli

import (
	"os"
	"testing"
)

// TestMain keeps the package's commands off any connection keeper: a test
// dials its own connections, never one a keeper of this user holds.
func TestMain(m *testing.M) {
	os.Setenv("STADO_NO_KEEPER", "1")
	os.Exit(m.Run())
}
