package nodeclass

import (
	"context"
	"fmt"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// TestResolveIsAdmittedByKarpentersPolicy resolves a node class (creating
// its instance profile and running the dry-run launch probes), then adds a
// tag to it so the profile is re-tagged, and checks every request the
// in-memory AWS received against Karpenter's controller policy and
// stevedore's generated one.
func TestResolveIsAdmittedByKarpentersPolicy(t *testing.T) {
	w := newWorld(t)
	clients, log := iampolicy.Record(w.aws.Clients(), w.aws.Authorization())
	r := NewResolver(clients, Options{ClusterName: cluster, Region: w.aws.Region(), Clock: w.clk})
	nc := nodeClass(w)
	st, err := r.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = st
	nc.Spec.Tags = map[string]string{"team": "platform"}
	if _, err := r.Resolve(context.Background(), nc, version); err != nil {
		t.Fatal(err)
	}
	calls := log.Take()
	ops := map[string]int{}
	for _, c := range calls {
		ops[c.Operation]++
	}
	for _, op := range []string{"CreateInstanceProfile", "AddRoleToInstanceProfile", "TagInstanceProfile", "CreateFleet", "RunInstances"} {
		if ops[op] == 0 {
			t.Errorf("no %s call recorded (%v); the test no longer covers it", op, ops)
		}
	}
	queue := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", w.aws.Region(), w.aws.AccountID(), w.setup.QueueName)
	for name, pol := range map[string]iampolicy.Policy{
		"karpenter": iampolicy.KarpenterReference("aws", w.aws.Region(), w.aws.AccountID(), cluster, w.setup.NodeRoleARN, queue),
		"stevedore": iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: cluster, AccountID: w.aws.AccountID(), Region: w.aws.Region(), NodeRoleName: w.setup.NodeRole, QueueName: w.setup.QueueName}),
	} {
		for _, d := range iampolicy.Denied(pol, calls) {
			t.Errorf("%s policy refuses %s", name, d)
		}
	}
}
