//go:build darwin

package units

// HostPortReader is the PortReader of this host: lsof and ps, through
// runner, on macOS. procRoot is not read here.
func HostPortReader(runner Runner, _ string) PortReader {
	return LsofPorts{Runner: runner}
}
