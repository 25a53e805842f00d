//go:build unix

package disruption

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used so far, user and system,
// every goroutine and the garbage collector included: the benchmarks
// report it per pass, as the wall clock of a shared machine says little.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
