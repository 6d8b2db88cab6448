package metrics

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	rm "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// reading is a family of one series read at scrape time: the Go
// runtime's and the process's.
type reading struct {
	name, help, kind string
	label, value     string // one label, or none when label is ""
	v                float64
}

func (r reading) familyName() string { return r.name }

func (r reading) appendTo(b []byte) []byte {
	b = appendHeader(b, r.name, r.help, r.kind)
	if r.label == "" {
		b = appendSeries(b, r.name, "", nil, nil, "", "")
	} else {
		b = appendSeries(b, r.name, "", []string{r.label}, []string{r.value}, "", "")
	}
	return appendFloat(b, r.v)
}

// fromRuntime is a go_ family read from one runtime/metrics sample.
type fromRuntime struct {
	sample, name, help, kind string
}

// runtimeFamilies are the go_ families a scrape reads from
// runtime/metrics, each one sample (docs/metrics.md lists them).
var runtimeFamilies = []fromRuntime{
	{"/gc/gogc:percent", "go_gc_gogc_percent", "Heap size target percentage configured by GOGC (runtime/metrics /gc/gogc:percent).", "gauge"},
	{"/gc/gomemlimit:bytes", "go_gc_gomemlimit_bytes", "Go runtime memory limit configured by GOMEMLIMIT (runtime/metrics /gc/gomemlimit:bytes).", "gauge"},
	{"/sched/goroutines:goroutines", "go_goroutines", "Number of goroutines that currently exist.", "gauge"},
	{"/gc/heap/allocs:bytes", "go_memstats_alloc_bytes_total", "Total bytes allocated in the heap since the process started (runtime/metrics /gc/heap/allocs:bytes).", "counter"},
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "Bytes of heap objects allocated and not yet freed (runtime/metrics /memory/classes/heap/objects:bytes).", "gauge"},
	{"/gc/heap/goal:bytes", "go_memstats_next_gc_bytes", "Heap size the next garbage collection cycle aims at (runtime/metrics /gc/heap/goal:bytes).", "gauge"},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Bytes of memory the Go runtime has mapped from the operating system (runtime/metrics /memory/classes/total:bytes).", "gauge"},
	{"/sched/gomaxprocs:threads", "go_sched_gomaxprocs_threads", "The current GOMAXPROCS: operating system threads that may run Go code at once.", "gauge"},
	{"/sched/threads/total:threads", "go_threads", "Operating system threads the Go runtime has now (runtime/metrics /sched/threads/total:threads).", "gauge"},
}

// gcQuantiles are the quantiles of go_gc_duration_seconds.
var gcQuantiles = []string{"0", "0.25", "0.5", "0.75", "1"}

// gcPauses is go_gc_duration_seconds: the quantiles of the stop-the-world
// pauses the runtime remembers (its last 256), their total and count.
type gcPauses struct {
	quantiles []time.Duration
	total     time.Duration
	count     int64
}

func (gcPauses) familyName() string { return "go_gc_duration_seconds" }

func (g gcPauses) appendTo(b []byte) []byte {
	const name = "go_gc_duration_seconds"
	b = appendHeader(b, name, "A summary of the stop-the-world pause durations of garbage collection cycles (runtime/debug.ReadGCStats: quantiles of the last 256 pauses).", "summary")
	for i, q := range gcQuantiles {
		b = appendSeries(b, name, "", nil, nil, "quantile", q)
		b = appendFloat(b, g.quantiles[i].Seconds())
	}
	b = appendSeries(b, name, "_sum", nil, nil, "", "")
	b = appendFloat(b, g.total.Seconds())
	b = appendSeries(b, name, "_count", nil, nil, "", "")
	return appendFloat(b, float64(g.count))
}

// appendRuntime adds the go_ families as they are now. The work is
// fixed: a few runtime samples and the pause history, which the runtime
// bounds.
func appendRuntime(fams []exposed) []exposed {
	samples := make([]rm.Sample, len(runtimeFamilies))
	for i, f := range runtimeFamilies {
		samples[i].Name = f.sample
	}
	rm.Read(samples)
	for i, f := range runtimeFamilies {
		r := reading{name: f.name, help: f.help, kind: f.kind}
		switch v := samples[i].Value; v.Kind() {
		case rm.KindUint64:
			r.v = float64(v.Uint64())
		case rm.KindFloat64:
			r.v = v.Float64()
		default:
			continue // not in this runtime
		}
		fams = append(fams, r)
	}
	fams = append(fams, reading{name: "go_info", help: "Information about the Go environment.", kind: "gauge", label: "version", value: runtime.Version(), v: 1})
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, len(gcQuantiles))
	debug.ReadGCStats(&gc)
	return append(fams, gcPauses{quantiles: gc.PauseQuantiles, total: gc.PauseTotal, count: gc.NumGC})
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/self/stat's
// times: 100 on every Linux architecture Go runs on.
const clockTicks = 100

// startTime is when this process started (Unix seconds), read once from
// /proc: the kernel's boot time and the process's start in ticks since.
var startTime = sync.OnceValues(func() (float64, bool) {
	stat, ok := selfStat()
	if !ok {
		return 0, false
	}
	start, err := strconv.ParseFloat(stat[19], 64)
	if err != nil {
		return 0, false
	}
	system, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(system)) {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return boot + start/clockTicks, err == nil
		}
	}
	return 0, false
})

// selfStat returns the fields of /proc/self/stat after the command name,
// so the process state is field 0 (field 3 of proc(5)).
func selfStat() ([]string, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, false
	}
	// the command name is in parentheses and may hold spaces or ')'
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(string(b[i+1:]))
	return f, len(f) > 21
}

// appendProcess adds the process_ families, read from /proc (Linux; on
// another system they are left out). The work is fixed: three small files
// and the process's open file descriptors, which its limit bounds.
func appendProcess(fams []exposed) []exposed {
	stat, ok := selfStat()
	if !ok {
		return fams
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.NaN()
		}
		return v
	}
	fams = append(fams,
		reading{name: "process_cpu_seconds_total", help: "User and system CPU time the process has spent, in seconds.", kind: "counter",
			v: (num(stat[11]) + num(stat[12])) / clockTicks},
		reading{name: "process_resident_memory_bytes", help: "Resident memory size of the process, in bytes.", kind: "gauge",
			v: num(stat[21]) * float64(os.Getpagesize())},
		reading{name: "process_virtual_memory_bytes", help: "Virtual memory size of the process, in bytes.", kind: "gauge",
			v: num(stat[20])},
	)
	if start, ok := startTime(); ok {
		fams = append(fams, reading{name: "process_start_time_seconds", help: "Start time of the process since the Unix epoch, in seconds.", kind: "gauge", v: start})
	}
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			fams = append(fams, reading{name: "process_open_fds", help: "Open file descriptors of the process.", kind: "gauge", v: float64(len(names))})
		}
	}
	if max, ok := maxFDs(); ok {
		fams = append(fams, reading{name: "process_max_fds", help: "The process's limit of open file descriptors (the soft limit).", kind: "gauge", v: max})
	}
	return fams
}

// maxFDs reads the soft limit of open files from /proc/self/limits;
// "unlimited" is +Inf.
func maxFDs() (float64, bool) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			if f[0] == "unlimited" {
				return math.Inf(1), true
			}
			v, err := strconv.ParseFloat(f[0], 64)
			return v, err == nil
		}
	}
	return 0, false
}
