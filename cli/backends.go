package cli

// Store backends beyond the file store, registered with registry.Open by
// their init functions.
import (
	_ "github.com/wisent/stado/registry/etcdstore"
)
