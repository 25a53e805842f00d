package main

import (
	"strings"
	"testing"
)

func TestParseFeatureGates(t *testing.T) {
	tests := []struct {
		in      string
		repair  bool
		spot    bool
		noRes   bool
		overlay bool
		buffer  bool
		wantErr string
	}{
		{in: defaultFeatureGates},
		{in: ""},
		{in: "NodeRepair=true", repair: true},
		{in: " NodeRepair=true , SpotToSpotConsolidation=true ", repair: true, spot: true},
		{in: "ReservedCapacity=true,SpotToSpotConsolidation=1", spot: true},
		{in: "ReservedCapacity=false", noRes: true},
		{in: "StaticCapacity=true"},
		{in: "NodeOverlay=false,CapacityBuffer=false"},
		{in: "NodeOverlay=true", overlay: true},
		{in: "CapacityBuffer=1", buffer: true},
		{in: "CapacityBuffer=true,CapacityBuffer=false"},
		{in: "NodeRepair", wantErr: "is not Name=true"},
		{in: "NodeRepair=yes", wantErr: "must be true or false"},
		{in: "Drift=true", wantErr: `unknown feature gate "Drift"; known gates: CapacityBuffer, NodeOverlay, NodeRepair, ReservedCapacity, SpotToSpotConsolidation, StaticCapacity`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			g, err := parseFeatureGates(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g[gateNodeRepair] != tc.repair || g[gateSpotToSpot] != tc.spot || g[gateReservedCapacity] == tc.noRes || g[gateNodeOverlay] != tc.overlay || g[gateCapacityBuffer] != tc.buffer {
				t.Fatalf("gates = %v", g)
			}
		})
	}
}

func TestCheckAWSFeatureGates(t *testing.T) {
	for _, tc := range []struct{ in, wantErr string }{
		{in: ""},
		{in: "NodeClassCEL=false"},
		{in: " NodeClassCEL=false , DRA=false "},
		{in: "NodeClassCEL=true", wantErr: "NodeClassCEL=true: stevedore does not implement Karpenter's alpha NodeClassCEL feature; set NodeClassCEL=false"},
		{in: "NodeClassCEL=false,DRA=1", wantErr: "DRA=true: stevedore does not implement"},
		{in: "DRA", wantErr: "is not Name=true"},
		{in: "DRA=maybe", wantErr: "must be true or false"},
		{in: "Nodeclasscel=false", wantErr: `unknown AWS feature gate "Nodeclasscel"; Karpenter's are DRA, NodeClassCEL`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			err := checkAWSFeatureGates(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
