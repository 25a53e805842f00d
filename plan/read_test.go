package plan

import (
	"strings"
	"testing"
)

// A NodePool whose duration is too long for Go is refused naming the field,
// rather than with the decoder's bare "invalid duration".
func TestDecodeDurationBeyondRange(t *testing.T) {
	const manifest = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: long}
spec:
  template:
    spec:
      expireAfter: 9999999999h
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`
	err := (&Objects{}).Decode("inline", []byte(manifest))
	if err == nil || !strings.Contains(err.Error(), "spec.template.spec.expireAfter") || !strings.Contains(err.Error(), "2562047h") {
		t.Fatalf("Decode = %v, want an error naming spec.template.spec.expireAfter and the bound", err)
	}
}
