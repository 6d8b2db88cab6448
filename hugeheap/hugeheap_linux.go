// Package hugeheap advises a short-lived process's heap for transparent
// huge pages before it decodes a fleet's worth of data. It is process
// memory policy, not host inspection, and imports only the standard
// library.
package hugeheap

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// hugePageSize is the size of the transparent huge pages asked for.
const hugePageSize = 2 << 20

// Prefer makes the next n bytes the heap grows into transparent
// huge pages, where the kernel offers them on request (THP "madvise", the
// Debian default). A read of the whole fleet decodes tens of megabytes into
// a fresh process: faulting that in 4 KiB pages cost more than decoding it
// (a fault took ~14 µs on the machine the budget is measured on, 16,000 of
// them per `service list` at 1,000 hosts). The heap is grown by one
// allocation of n bytes, that range is advised, and the allocation is
// dropped: the runtime hands out its lowest free pages first, so the
// decoding that follows fills the advised range. Where the kernel refuses
// the advice nothing changes. Only the first call in a process acts: the
// advice is for a fresh heap.
//
// Under strict overcommit (vm.overcommit_memory 2) the advice is skipped:
// there the kernel counts the dropped allocation against the machine's
// commit limit, and a refused mapping ends a Go process.
func Prefer(n int) {
	hugeOnce.Do(func() {
		if mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && strings.TrimSpace(string(mode)) == "2" {
			return
		}
		adviseHeap(n)
	})
}

var hugeOnce sync.Once

// adviseHeap returns the range it advised, empty when none was.
func adviseHeap(n int) (beg, end uintptr) {
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg = (p + hugePageSize - 1) &^ (hugePageSize - 1)
	end = (p + uintptr(n)) &^ (hugePageSize - 1)
	if beg < end {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, beg, end-beg, 14 /* MADV_HUGEPAGE */); errno != 0 {
			beg, end = 0, 0 // refused: no THP in this kernel
		}
	}
	runtime.KeepAlive(b)
	runtime.GC() // b is garbage now: its pages are free for what follows
	return beg, end
}
