package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// usage is a process's resident memory and CPU over an interval, sampled
// from /proc: the figures Karpenter's performance suite asks of its
// controller (p95 memory, average CPU).
type usage struct {
	Samples  int     `json:"samples"`
	P95RSSMB float64 `json:"p95RSSMB"`
	MaxRSSMB float64 `json:"maxRSSMB"`
	AvgCPU   float64 `json:"avgCPUCores"`
}

// String is the part of a spec's result line that gives the usage.
func (u *usage) String() string {
	if u == nil || u.Samples == 0 {
		return ""
	}
	return fmt.Sprintf(" (controller: p95 %.0f MB, max %.0f MB resident, %.3f cores on average)", u.P95RSSMB, u.MaxRSSMB, u.AvgCPU)
}

// sampler reads a process's resident set size every interval until stopped.
type sampler struct {
	pid     int
	started time.Time
	ticks0  uint64
	done    chan struct{}
	out     chan []float64
}

func sampleUsage(pid int, every time.Duration) *sampler {
	s := &sampler{pid: pid, started: time.Now(), done: make(chan struct{}), out: make(chan []float64, 1)}
	s.ticks0, _ = cpuTicks(pid)
	go func() {
		var rss []float64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if mb, ok := residentMB(pid); ok {
				rss = append(rss, mb)
			}
			select {
			case <-s.done:
				s.out <- rss
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and summarizes it; nil when nothing was read (no
// /proc, or the process was gone).
func (s *sampler) stop() *usage {
	close(s.done)
	rss := <-s.out
	if len(rss) == 0 {
		return nil
	}
	slices.Sort(rss)
	u := &usage{Samples: len(rss), MaxRSSMB: rss[len(rss)-1]}
	// Nearest rank.
	u.P95RSSMB = rss[max(0, (len(rss)*95+99)/100-1)]
	if ticks, ok := cpuTicks(s.pid); ok && ticks >= s.ticks0 {
		// Linux counts CPU time in clock ticks of 1/100 s (USER_HZ).
		u.AvgCPU = float64(ticks-s.ticks0) / 100 / time.Since(s.started).Seconds()
	}
	return u
}

// residentMB reads VmRSS from /proc/PID/status, in MiB.
func residentMB(pid int) (float64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

// cpuTicks reads a process's user and system CPU time from /proc/PID/stat.
func cpuTicks(pid int) (uint64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	// After the name: state is field 3 of the line, utime 14, stime 15.
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseUint(f[11], 10, 64)
	sys, err2 := strconv.ParseUint(f[12], 10, 64)
	return user + sys, err1 == nil && err2 == nil
}
