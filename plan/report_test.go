package plan

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// WriteJSON splices each shared instance-type list, indented once, into its
// claims; the document must be the one json.MarshalIndent gives.
func TestWriteJSONIsMarshalIndent(t *testing.T) {
	shared := []string{"m7g.large", "m6g.large", `odd"name\`}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	r := &Report{
		SchemaVersion: SchemaVersion,
		NodeClaims: []NodeClaim{
			{NodePool: "a", InstanceTypes: shared, CapacityTypes: []string{"spot"}, Zones: []string{"z1"}, PricePerHour: 0.1, Requests: requests, Pods: []string{"default/p-1"}},
			{NodePool: `"instanceTypes": null`, InstanceTypes: shared, PricePerHour: 0.1, Pods: []string{"default/p-2"}},
			{NodePool: "b", InstanceTypes: shared[1:], MinValuesRelaxed: true},
			{NodePool: "c", InstanceTypes: []string{}},
			{NodePool: "d"},
			{NodePool: "e", InstanceTypes: []string{"c7g.xlarge"}},
		},
		Placements: []Placement{{Pod: "default/q", Node: "n1"}},
	}
	var got bytes.Buffer
	if err := r.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want)+"\n" {
		t.Errorf("WriteJSON wrote\n%s\njson.MarshalIndent gives\n%s", got.String(), want)
	}
}
