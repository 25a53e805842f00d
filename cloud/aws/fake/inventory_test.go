package fake

import (
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// TestOperationsAreInTheInventory: every operation the in-memory AWS serves
// is in the IAM inventory, so a call added to both sides is also given its
// IAM actions.
func TestOperationsAreInTheInventory(t *testing.T) {
	for _, op := range Operations() {
		// The inventory names services as package sdk does: without
		// the spaces of a service ID such as "ARC Zonal Shift".
		svc := strings.ReplaceAll(serviceOf(op).id, " ", "")
		if _, ok := iampolicy.Lookup(svc, op); !ok {
			t.Errorf("%s.%s is served by the fake but missing from iampolicy.Inventory", svc, op)
		}
	}
}
