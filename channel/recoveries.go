package channel

import (
	"github.com/wisent/stado/register"
)

// The recoveries verb reads the host's recovery register, changing
// nothing. It takes no arguments: the register is small and the caller
// filters it. It was added within protocol 2 (a host whose stado predates
// it refuses it as unknown_verb, naming the verb), because every other
// verb is unchanged.

// RecoveriesResult is a host's recovery register as it reads it.
type RecoveriesResult struct {
	// File is the register's path on the host.
	File string `json:"file"`
	// Recoveries are its rows, oldest first; empty when there is no file.
	// A row crosses the channel in the register's own line format.
	Recoveries []register.Recovery `json:"recoveries"`
}
