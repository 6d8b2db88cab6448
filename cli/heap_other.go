//go:build !linux

package cli

// preferHugePages is the Linux advice on the heap (heap_linux.go); other
// systems decide page sizes themselves.
func preferHugePages(int) {}
