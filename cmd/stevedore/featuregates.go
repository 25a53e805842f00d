package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Feature gates, named as Karpenter names them so that a FEATURE_GATES value
// carries over.
const (
	// gateNodeRepair replaces nodes whose conditions stay unhealthy (off by
	// default, as in Karpenter: replacing nodes on a signal that may be
	// transient is a choice the operator makes).
	gateNodeRepair = "NodeRepair"
	// gateSpotToSpot lets consolidation replace spot nodes with cheaper
	// spot nodes (off by default: it trades interruptions for savings).
	gateSpotToSpot = "SpotToSpotConsolidation"
	// gateReservedCapacity launches into the capacity reservations that
	// EC2NodeClasses select (on by default, as in Karpenter).
	gateReservedCapacity = "ReservedCapacity"
	// gateStaticCapacity makes static NodePools (spec.replicas) act: their
	// node count is held at the replicas and their drifted nodes replaced
	// (off by default, as in Karpenter, where it is alpha).
	gateStaticCapacity = "StaticCapacity"
	// gateNodeOverlay applies NodeOverlays to the instance types' prices
	// and capacity (off by default, as in Karpenter, where it is alpha).
	gateNodeOverlay = "NodeOverlay"
	// gateCapacityBuffer serves CapacityBuffers: spare capacity kept ahead
	// of pods (off by default, as in Karpenter, where it is alpha).
	gateCapacityBuffer = "CapacityBuffer"
)

// defaultFeatureGates is the default value of --feature-gates: Karpenter's
// own default, so that the value means the same in both.
const defaultFeatureGates = "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"

// knownGates are the gates and their defaults.
var knownGates = map[string]bool{gateNodeRepair: false, gateReservedCapacity: true, gateSpotToSpot: false, gateStaticCapacity: false, gateNodeOverlay: false, gateCapacityBuffer: false}

// unimplementedGates are Karpenter's alpha gates that stevedore does not
// implement. Off (their default, and what Karpenter's chart writes) they
// are accepted, so that a copied FEATURE_GATES value starts the controller;
// on they are refused, because a cluster that relies on them would
// otherwise get decisions that silently leave them out. Every alpha gate of
// Karpenter v1.14.1 is implemented today, so the list is empty.
var unimplementedGates = map[string]bool{}

func featureGateNames() []string {
	return slices.Sorted(maps.Keys(knownGates))
}

// gateSetting is one Name=value of a feature gate list.
type gateSetting struct {
	name string
	on   bool
}

// splitGates reads "Name=true, Other=false" in order; empty items are
// skipped.
func splitGates(v string) ([]gateSetting, error) {
	var out []gateSetting
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not Name=true or Name=false", part)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%q: the value must be true or false", part)
		}
		out = append(out, gateSetting{name: strings.TrimSpace(name), on: on})
	}
	return out, nil
}

// unimplemented is the error for turning on a gate stevedore does not
// implement.
func unimplemented(name string) error {
	return fmt.Errorf("%s=true: stevedore does not implement Karpenter's alpha %s feature; set %s=false (or leave it out) to run without it", name, name, name)
}

// parseFeatureGates reads "Name=true,Other=false" into the gates' values,
// every known gate present.
func parseFeatureGates(v string) (map[string]bool, error) {
	settings, err := splitGates(v)
	if err != nil {
		return nil, err
	}
	gates := maps.Clone(knownGates)
	for _, g := range settings {
		switch {
		case unimplementedGates[g.name] && g.on:
			return nil, unimplemented(g.name)
		case unimplementedGates[g.name]:
			continue
		case !slices.Contains(featureGateNames(), g.name):
			return nil, fmt.Errorf("unknown feature gate %q; known gates: %s", g.name, strings.Join(featureGateNames(), ", "))
		}
		gates[g.name] = g.on
	}
	return gates, nil
}

// awsGates are Karpenter's AWS-specific gates (AWS_FEATURE_GATES), all
// alpha and off by default, none of which stevedore implements: off they
// are accepted, on they are refused, for the reason given at
// unimplementedGates.
var awsGates = []string{"DRA", "NodeClassCEL"}

// checkAWSFeatureGates checks an AWS_FEATURE_GATES value such as
// "NodeClassCEL=false,DRA=false".
func checkAWSFeatureGates(v string) error {
	settings, err := splitGates(v)
	if err != nil {
		return err
	}
	for _, g := range settings {
		switch {
		case !slices.Contains(awsGates, g.name):
			return fmt.Errorf("unknown AWS feature gate %q; Karpenter's are %s", g.name, strings.Join(awsGates, ", "))
		case g.on:
			return unimplemented(g.name)
		}
	}
	return nil
}
