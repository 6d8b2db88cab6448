//go:build !linux

// Package hugeheap advises a short-lived process's heap for transparent
// huge pages (Linux only; other systems decide page sizes themselves).
package hugeheap

// Prefer does nothing here (hugeheap_linux.go).
func Prefer(int) {}
