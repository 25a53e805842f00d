package scenario

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
)

// Node labels that name an instance type or a zone, as nodeSelectors
// write them.
var (
	typeLabels = []string{corev1.LabelInstanceTypeStable, corev1.LabelInstanceType}
	zoneLabels = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}
)

// targets are the instance types and zones the run's account has, which
// events may name.
type targets struct {
	// types are the catalog's types, or spec.aws.instanceTypes when set,
	// plus those of the Node manifests.
	types      []string
	restricted bool
	zones      []string
}

// instanceTypes checks spec.aws.instanceTypes against the catalog.
func (l *loader) instanceTypes(names []string) {
	for i, n := range names {
		if _, ok := catalog.Lookup(n); ok {
			continue
		}
		l.scenarioError(fmt.Sprintf("spec.aws.instanceTypes[%d]", i), fmt.Sprintf("%q is not an instance type of the catalog", n),
			"name an EC2 instance type such as m6i.large"+suggest(n, catalogNames()))
	}
}

func catalogNames() []string {
	all, err := catalog.All()
	if err != nil {
		return nil
	}
	out := make([]string, len(all))
	for i := range all {
		out[i] = all[i].Name
	}
	return out
}

// newTargets gathers what events may name.
func newTargets(aws AWSConfig, objects []Object) *targets {
	t := &targets{zones: slices.Clone(aws.Zones)}
	if len(aws.InstanceTypes) > 0 {
		t.types, t.restricted = slices.Clone(aws.InstanceTypes), true
	} else {
		t.types = catalogNames()
	}
	for _, o := range objects {
		n, ok := o.Object.(*corev1.Node)
		if !ok {
			continue
		}
		for _, k := range typeLabels {
			if v := n.Labels[k]; v != "" && !slices.Contains(t.types, v) {
				t.types = append(t.types, v)
			}
		}
		for _, k := range zoneLabels {
			if v := n.Labels[k]; v != "" && !slices.Contains(t.zones, v) {
				t.zones = append(t.zones, v)
			}
		}
	}
	return t
}

func (t *targets) checkType(l *loader, field, name string) {
	if slices.Contains(t.types, name) {
		return
	}
	if t.restricted {
		l.scenarioError(field, fmt.Sprintf("instance type %q is not one of the account's (spec.aws.instanceTypes)", name),
			"use one of "+strings.Join(t.types, ", ")+", or add it to spec.aws.instanceTypes"+suggest(name, t.types))
		return
	}
	l.scenarioError(field, fmt.Sprintf("%q is not an instance type of the catalog", name),
		"name an EC2 instance type such as m6i.large"+suggest(name, t.types))
}

func (t *targets) checkZone(l *loader, field, name string) {
	if slices.Contains(t.zones, name) {
		return
	}
	l.scenarioError(field, fmt.Sprintf("zone %q is not one of the account's zones", name),
		"use one of "+strings.Join(t.zones, ", ")+" (spec.aws.zones), or add it there"+suggest(name, t.zones))
}

// eventTargets checks the instance types and zones that events name:
// insufficientCapacity's lists, and the nodeSelectors of spotInterruption
// and nodeFailure.
func (l *loader) eventTargets(events []TimedEvent, aws AWSConfig, objects []Object) {
	var t *targets
	for _, e := range events {
		if t == nil {
			t = newTargets(aws, objects)
		}
		switch e.Kind {
		case "insufficientCapacity":
			ice := e.Event.InsufficientCapacity
			field := e.Field() + ".insufficientCapacity"
			for i, n := range ice.InstanceTypes {
				t.checkType(l, fmt.Sprintf("%s.instanceTypes[%d]", field, i), n)
			}
			for i, z := range ice.Zones {
				t.checkZone(l, fmt.Sprintf("%s.zones[%d]", field, i), z)
			}
		case "zonalShift":
			if z := e.Event.ZonalShift.Zone; z != "" {
				t.checkZone(l, e.Field()+".zonalShift.zone", z)
			}
		case "spotInterruption", "nodeFailure", "instanceStatusFailure":
			sel := e.Event.SpotInterruption
			switch {
			case e.Event.NodeFailure != nil:
				sel = &e.Event.NodeFailure.Selection
			case e.Event.InstanceStatusFailure != nil:
				sel = &e.Event.InstanceStatusFailure.Selection
			}
			field := e.Field() + "." + e.Kind + ".nodeSelector."
			for _, k := range typeLabels {
				if v, ok := sel.NodeSelector[k]; ok {
					t.checkType(l, field+k, v)
				}
			}
			for _, k := range zoneLabels {
				if v, ok := sel.NodeSelector[k]; ok {
					t.checkZone(l, field+k, v)
				}
			}
		}
	}
}
