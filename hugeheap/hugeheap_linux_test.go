package hugeheap

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wisent/stado/tests/testbed"
)

// The heap a fleet-wide read grows into is advised for huge pages: the
// mapping holding the advised range carries the kernel's "hg" flag.
func TestFleetReadHeapIsAdvisedForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		testbed.Unavailable(t, "this kernel offers no transparent huge pages (%q, %v): the advice is refused and changes nothing", mode, err)
	}
	beg, end := adviseHeap(16 << 20)
	if beg == 0 || end <= beg {
		t.Fatalf("advised [%#x, %#x): nothing", beg, end)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var inRange bool
	for _, line := range strings.Split(string(smaps), "\n") {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			inRange = lo <= beg && beg < hi
			continue
		}
		if inRange && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(" "+line[len("VmFlags:"):]+" ", " hg ") {
				t.Fatalf("the mapping holding %#x is not advised for huge pages: %s", beg, line)
			}
			return
		}
	}
	t.Fatalf("no mapping holds the advised address %#x", beg)
}
