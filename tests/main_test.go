// Package tests holds stado's journeys: end-to-end tests that drive the
// stado binary against the testbed's simulated hosts (real systemd, real
// OpenSSH) and a real etcd, all on loopback. They skip with one line where
// the testbed cannot run, and fail instead under STADO_TESTBED=required.
package tests

import (
	"os"
	"testing"

	"github.com/wisent/stado/tests/testbed"
)

// TestMain runs the journeys, then tears down the one testbed they shared if
// this process brought it up.
func TestMain(m *testing.M) {
	os.Exit(testbed.Main(m))
}
