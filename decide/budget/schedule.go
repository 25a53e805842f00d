package budget

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// maxSteps bounds the walk from one cron fire to the next in NextChange. A
// schedule that fires every minute with a duration of weeks would otherwise
// take tens of thousands of steps; stopping early only makes NextChange
// answer with a time at which nothing changes yet, which a caller that
// checks again then handles.
const maxSteps = 10000

// Active returns the indexes (in Budgets) of np's budgets that apply at
// now, in order. A budget whose schedule cannot be parsed is not listed:
// Compute reports it in Allowances.Invalid, and it blocks everything.
func Active(np *karpv1.NodePool, now time.Time) []int {
	var out []int
	for i, b := range Budgets(np) {
		if active, err := isActive(&b, now); err == nil && active {
			out = append(out, i)
		}
	}
	return out
}

// NextChange returns the first time after now at which one of np's budgets
// starts or stops applying, so that a caller can look again then; false when
// none ever will (no budget has a schedule, or no schedule fires again).
func NextChange(np *karpv1.NodePool, now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, b := range Budgets(np) {
		if b.Schedule == nil && b.Duration == nil {
			continue
		}
		sched, err := parseSchedule(b.Schedule)
		if err != nil {
			// It blocks everything, now and later: nothing to wait for.
			continue
		}
		if t, ok := windowChange(sched, duration(&b), now.UTC()); ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

// windowChange returns the first time after now at which a schedule with
// duration d starts or stops applying. It applies from each time f the
// schedule fires until f+d (excluded); windows that overlap or touch merge.
func windowChange(sched cron.Schedule, d time.Duration, now time.Time) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	f := sched.Next(now.Add(-d))
	if f.IsZero() {
		return time.Time{}, false
	}
	if f.After(now) {
		return f, true // the next window opens
	}
	// Applying now, since f fired within the last d. The window lasts until
	// d after the last fire of the run of fires each no more than d after
	// the one before.
	for range maxSteps {
		g := sched.Next(f)
		if g.IsZero() || g.After(f.Add(d)) {
			break
		}
		f = g
	}
	return f.Add(d), true
}

// isActive reports whether b applies at now: always without a schedule;
// with one, when the schedule fired within the last duration (in UTC).
func isActive(b *karpv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	sched, err := parseSchedule(b.Schedule)
	if err != nil {
		return false, err
	}
	now = now.UTC()
	// The first fire after now-d is the one that counts: if it is not after
	// now, the schedule fired in (now-d, now] and the budget applies.
	next := sched.Next(now.Add(-duration(b)))
	// A schedule that never fires (February 30th) never applies; the
	// validator warns about it in the same words.
	return !next.IsZero() && !next.After(now), nil
}

func duration(b *karpv1.Budget) time.Duration {
	if b.Duration == nil {
		return 0
	}
	return b.Duration.Duration
}

// parseSchedule parses a budget's schedule as the validator does: five
// fields or a descriptor such as @daily, always in UTC.
func parseSchedule(schedule *string) (cron.Schedule, error) {
	if schedule == nil {
		return nil, errors.New("duration is set without a schedule")
	}
	s := strings.TrimSpace(*schedule)
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, fmt.Errorf("invalid cron schedule %q: time zones are not supported", *schedule)
	}
	sched, err := cron.ParseStandard("TZ=UTC " + s)
	if err != nil {
		return nil, fmt.Errorf("invalid cron schedule %q: %w", *schedule, err)
	}
	return sched, nil
}

// Describe renders a budget the way its manifest reads, for events and
// stevedore explain: nodes "0", reasons [Drifted], schedule "0 9 * * mon-fri",
// duration 8h0m0s.
func Describe(b karpv1.Budget) string {
	parts := []string{fmt.Sprintf("nodes %q", b.Nodes)}
	if len(b.Reasons) > 0 {
		parts = append(parts, fmt.Sprintf("reasons %v", b.Reasons))
	}
	if b.Schedule != nil {
		parts = append(parts, fmt.Sprintf("schedule %q", *b.Schedule))
	}
	if b.Duration != nil {
		parts = append(parts, fmt.Sprintf("duration %s", b.Duration.Duration))
	}
	return strings.Join(parts, ", ")
}
