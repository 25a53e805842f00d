package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
)

// Event reasons the zonal shift watcher records on NodePools, Karpenter's.
const (
	// ReasonZonalShiftActive is a NodePool that can launch into a zone
	// the cluster's traffic was just shifted away from.
	ReasonZonalShiftActive = "ZonalShiftActive"
	// ReasonZonalShiftCleared is a NodePool that can launch into a zone
	// whose zonal shift just ended.
	ReasonZonalShiftCleared = "ZonalShiftCleared"
)

// ZonalShiftEventInterval is the least time between two zonal shift events
// of the same reason about the same NodePool and zone.
const ZonalShiftEventInterval = 2 * time.Minute

// ZonalShiftWatcher reads the cluster's ARC zonal shifts into its Tracker
// (which the AWS provider asks while it builds offerings) and, when the
// zones shifted away from change, logs so and records on each NodePool
// that can launch into a zone that changed ZonalShiftActive (shifted
// away from now) or ZonalShiftCleared (no longer), as Karpenter's zonal
// shift controller does. A NodePool can launch into a zone when its
// EC2NodeClass has a subnet there and its requirements allow the zone's
// name and ID. Create it with NewZonalShiftWatcher.
type ZonalShiftWatcher struct {
	tracker *zonalshift.Tracker
	reader  client.Reader
	clock   clock.PassiveClock
	events  *eventlimit.Recorder
	// last are the zone IDs shifted away from at the last Poll whose
	// events were recorded.
	last []string
}

// NewZonalShiftWatcher returns a watcher of t's shifts that reads NodePools
// and EC2NodeClasses through reader and records events through rec (nil
// drops them).
func NewZonalShiftWatcher(t *zonalshift.Tracker, reader client.Reader, rec events.EventRecorder, clk clock.PassiveClock) *ZonalShiftWatcher {
	return &ZonalShiftWatcher{tracker: t, reader: reader, clock: clk, events: eventlimit.New(rec, ZonalShiftEventInterval)}
}

// Poll reads the shifts once and, if the zones shifted away from changed,
// reports the change. A failed read keeps the shifts read before; a failure
// to report keeps the change to be reported on the next Poll.
func (w *ZonalShiftWatcher) Poll(ctx context.Context) error {
	if err := w.tracker.Update(ctx); err != nil {
		return err
	}
	now := w.tracker.ShiftedZoneIDs()
	if slices.Equal(now, w.last) {
		return nil
	}
	log.FromContext(ctx).Info("zones under a zonal shift changed; no capacity is launched into them", "zoneIDs", now)
	if err := w.record(ctx, w.last, now); err != nil {
		return fmt.Errorf("recording zonal shift events: %w", err)
	}
	w.last = now
	return nil
}

// record records the events of a change from the zones previous to the
// zones current (zone IDs, sorted), NodePool by NodePool in name order.
func (w *ZonalShiftWatcher) record(ctx context.Context, previous, current []string) error {
	var shifted, cleared []string
	for _, id := range current {
		if !slices.Contains(previous, id) {
			shifted = append(shifted, id)
		}
	}
	for _, id := range previous {
		if !slices.Contains(current, id) {
			cleared = append(cleared, id)
		}
	}
	pools := &karpv1.NodePoolList{}
	if err := w.reader.List(ctx, pools); err != nil {
		return fmt.Errorf("listing NodePools: %w", err)
	}
	classes := &awsv1.EC2NodeClassList{}
	if err := w.reader.List(ctx, classes); err != nil {
		return fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	byName := make(map[string]*awsv1.EC2NodeClass, len(classes.Items))
	for i := range classes.Items {
		byName[classes.Items[i].Name] = &classes.Items[i]
	}
	slices.SortFunc(pools.Items, func(a, b karpv1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	now := w.clock.Now()
	for i := range pools.Items {
		np := &pools.Items[i]
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Group != wellknown.GroupAWS || ref.Kind != wellknown.KindEC2NodeClass || byName[ref.Name] == nil {
			continue
		}
		for _, id := range shifted {
			if zone, ok := launchesInto(np, byName[ref.Name], id); ok {
				w.events.EventfBy(now, id, np, nil, corev1.EventTypeWarning, ReasonZonalShiftActive, "ZonalShift",
					"the cluster's traffic is shifted away from zone %s (%s): the NodePool launches nothing there until the shift ends", zone, id)
			}
		}
		for _, id := range cleared {
			if zone, ok := launchesInto(np, byName[ref.Name], id); ok {
				w.events.EventfBy(now, id, np, nil, corev1.EventTypeNormal, ReasonZonalShiftCleared, "ZonalShift",
					"the zonal shift away from zone %s (%s) has ended: the NodePool may launch there again", zone, id)
			}
		}
	}
	return nil
}

// launchesInto returns the name of the zone with ID zoneID and whether the
// NodePool can launch into it: its node class has a subnet there, and its
// requirements allow the zone's name and ID.
func launchesInto(np *karpv1.NodePool, class *awsv1.EC2NodeClass, zoneID string) (string, bool) {
	zone := ""
	for _, s := range class.Status.Subnets {
		if s.ZoneID == zoneID {
			zone = s.Zone
			break
		}
	}
	if zone == "" {
		return "", false
	}
	reqs, err := offerings.NodePoolRequirements(np)
	if err != nil {
		return "", false
	}
	for key, value := range map[string]string{wellknown.LabelTopologyZone: zone, wellknown.LabelTopologyZoneID: zoneID} {
		if r, ok := reqs.Get(key); ok && !r.Allows(value) {
			return "", false
		}
	}
	return zone, true
}
