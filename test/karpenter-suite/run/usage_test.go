package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// The sampler reads this very process: it is resident, so every figure is
// positive and the p95 lies between the smallest sample and the largest.
func TestSampleUsage(t *testing.T) {
	s := sampleUsage(os.Getpid(), 10*time.Millisecond)
	buf := make([][]byte, 0, 64)
	for range 64 {
		buf = append(buf, make([]byte, 1<<20))
	}
	time.Sleep(50 * time.Millisecond)
	u := s.stop()
	if u == nil || u.Samples < 2 {
		t.Fatalf("usage = %+v, want several samples", u)
	}
	if u.P95RSSMB <= 0 || u.P95RSSMB > u.MaxRSSMB {
		t.Errorf("p95 %.1f MB, max %.1f MB", u.P95RSSMB, u.MaxRSSMB)
	}
	if u.AvgCPU < 0 {
		t.Errorf("average CPU %.3f", u.AvgCPU)
	}
	runtime.KeepAlive(buf)
	if got := (&usage{}).String(); got != "" {
		t.Errorf("empty usage prints %q", got)
	}
	if s := sampleUsage(-1, time.Millisecond).stop(); s != nil {
		t.Errorf("a missing process gives %+v, want nil", s)
	}
}
