//go:build !darwin

package units

// HostPortReader is the PortReader of this host: /proc (procRoot) and
// cgroups. runner is not used here.
func HostPortReader(_ Runner, procRoot string) PortReader {
	return ProcPorts{Root: procRoot}
}
