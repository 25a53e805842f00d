package clock

import (
	"testing"
	"time"
)

func TestAdvanceToNeverGoesBack(t *testing.T) {
	c := New(DefaultStart)
	for _, tc := range []struct {
		to, want time.Time
	}{
		{DefaultStart.Add(time.Minute), DefaultStart.Add(time.Minute)},
		{DefaultStart, DefaultStart.Add(time.Minute)},
		{DefaultStart.Add(24 * time.Hour), DefaultStart.Add(24 * time.Hour)},
	} {
		c.AdvanceTo(tc.to)
		if got := c.Now(); !got.Equal(tc.want) {
			t.Errorf("AdvanceTo(%s): now %s, want %s", tc.to, got, tc.want)
		}
	}
	if DefaultStart.Weekday() != time.Monday {
		t.Errorf("DefaultStart is a %s", DefaultStart.Weekday())
	}
}
