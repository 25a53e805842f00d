//go:build !linux

package runner

import "time"

// cpuTime and peakRSSMiB are read from the Linux kernel; elsewhere the
// benchmark leaves those metrics out.
func cpuTime() (time.Duration, bool) { return 0, false }

func peakRSSMiB() (float64, bool) { return 0, false }
