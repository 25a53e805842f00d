package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// TestParityFields runs testdata/parity-fields: a NodePool bounded with Gte
// and Lte, whose EC2NodeClass sets networkInterfaces, ipPrefixCount,
// connectionTracking, cpuOptions and placementGroupSelector. Every pod runs,
// every launch is the one compatible type, and each instance was launched
// from a template carrying the fields, into the placement group, with its
// NodeClaim labelled accordingly. Two runs give the same document.
func TestParityFields(t *testing.T) {
	s := testScheme(t)
	runOnce := func() (*Runner, []byte) {
		run, problems, err := scenario.Load([]string{"testdata/parity-fields"}, s)
		if err != nil {
			t.Fatalf("%v: %v", err, problems)
		}
		r, err := New(Options{Run: run, Scheme: s})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := r.Run()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(doc); err != nil {
			t.Fatal(err)
		}
		return r, buf.Bytes()
	}
	r, first := runOnce()
	if _, second := runOnce(); !bytes.Equal(first, second) {
		t.Fatal("two runs of testdata/parity-fields with the same seed differ")
	}
	doc := decode(t, first)

	if p := doc.Final.Pods; p.Total != 4 || p.Running != 4 {
		t.Errorf("pods at the end: %+v, want 4 running", p)
	}
	launches := eventsOf(doc, report.KindNodeClaimLaunched)
	if len(launches) == 0 {
		t.Fatal("nothing launched")
	}
	pgID := ""
	for _, e := range launches {
		if e.InstanceType != "c8in.96xlarge" {
			t.Errorf("NodeClaim %s launched %s, want c8in.96xlarge, the only compatible type", e.NodeClaim, e.InstanceType)
		}
		info, ok := r.AWS().Instance(e.InstanceID)
		if !ok {
			t.Errorf("instance %s of NodeClaim %s not found", e.InstanceID, e.NodeClaim)
			continue
		}
		if info.PlacementGroupID == "" || info.PlacementPartition < 1 || info.PlacementPartition > 3 {
			t.Errorf("instance %s placed in %q partition %d, want the training group, partition 1 to 3", info.ID, info.PlacementGroupID, info.PlacementPartition)
		}
		pgID = info.PlacementGroupID
		// The template itself may be gone: unused templates are deleted
		// after a minute. The instance keeps what it was launched with.
		data := info.LaunchTemplateData
		if data == nil {
			t.Fatalf("instance %s has no launch template data (template %s)", info.ID, info.LaunchTemplateName)
		}
		enis := data.NetworkInterfaces
		switch {
		case len(enis) != 2 || *enis[1].NetworkCardIndex != 1 || *enis[1].InterfaceType != "efa-only":
			t.Errorf("template %s interfaces %+v, want the primary and an efa-only one on card 1", info.LaunchTemplateName, enis)
		case enis[0].Ipv4PrefixCount == nil || *enis[0].Ipv4PrefixCount != 2:
			t.Errorf("template %s: primary prefix count %v, want 2", info.LaunchTemplateName, enis[0].Ipv4PrefixCount)
		case enis[0].ConnectionTrackingSpecification == nil || *enis[0].ConnectionTrackingSpecification.UdpTimeout != 30:
			t.Errorf("template %s: primary connection tracking %+v", info.LaunchTemplateName, enis[0].ConnectionTrackingSpecification)
		}
		if data.CpuOptions == nil || data.CpuOptions.NestedVirtualization != "enabled" {
			t.Errorf("template %s: CPU options %+v, want nested virtualization", info.LaunchTemplateName, data.CpuOptions)
		}
		if data.Placement == nil || *data.Placement.GroupId != info.PlacementGroupID || *data.Placement.PartitionNumber != info.PlacementPartition {
			t.Errorf("template %s: placement %+v, instance in %s partition %d", info.LaunchTemplateName, data.Placement, info.PlacementGroupID, info.PlacementPartition)
		}
	}

	var claims karpv1.NodeClaimList
	if err := r.API().List(context.Background(), &claims, client.InNamespace("")); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("no NodeClaims at the end")
	}
	for _, nc := range claims.Items {
		part, _ := strconv.Atoi(nc.Labels[wellknown.LabelPlacementGroupPartition])
		if nc.Labels[wellknown.LabelPlacementGroupID] != pgID || part < 1 || part > 3 {
			t.Errorf("NodeClaim %s labels %v, want placement-group-id %s and a partition 1 to 3", nc.Name, nc.Labels, pgID)
		}
		var ops []string
		for _, r := range nc.Spec.Requirements {
			if r.Key == wellknown.LabelInstanceCPU {
				ops = append(ops, string(r.Operator)+" "+r.Values[0])
			}
		}
		if !slices.Equal(ops, []string{"Gte 192", "Lte 384"}) {
			t.Errorf("NodeClaim %s instance-cpu requirements %v, want [Gte 192, Lte 384]", nc.Name, ops)
		}
	}
}
