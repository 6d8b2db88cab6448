// Command stado keeps a fleet's long-running services the way their owner
// declared them. All behaviour lives in package cli.
package main

import (
	"os"

	"github.com/wisent/stado/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
