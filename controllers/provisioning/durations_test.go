package provisioning

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestNodePoolWithTooLongDurationIsLeftOut: a stored NodePool whose
// duration is longer than the longest there is (the API's pattern accepts
// "9999999999h") decodes, is left out with the field, the bound and the fix,
// and the other NodePools launch as before.
func TestNodePoolWithTooLongDurationIsLeftOut(t *testing.T) {
	pool := func(name, disruption, template string) *karpv1.NodePool {
		np := &karpv1.NodePool{}
		doc := `{"metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{` + template +
			`"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}},` +
			`"disruption":{` + disruption + `}}}`
		if err := json.Unmarshal([]byte(doc), np); err != nil {
			t.Fatalf("NodePool %s does not decode: %v", name, err)
		}
		return np
	}
	st := state.NewCluster()
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	st.UpdateEC2NodeClass(nc)
	st.UpdateNodePool(pool("fine", `"consolidateAfter":"1m"`, `"expireAfter":"720h",`))
	st.UpdateNodePool(pool("grace", `"consolidateAfter":"1m"`, `"terminationGracePeriod":"9999999999h",`))
	st.UpdateNodePool(pool("budget", `"consolidateAfter":"1m","budgets":[{"nodes":"0","schedule":"@daily","duration":"9999999999h"}]`, ``))

	pools, skipped := LaunchablePools(context.Background(), twoTypes{}, st.Snapshot(time.Unix(0, 0)))
	if len(pools) != 1 || pools[0].Name != "fine" {
		t.Fatalf("launchable pools %v, want only fine", pools)
	}
	want := map[string]string{"grace": "spec.template.spec.terminationGracePeriod", "budget": "spec.disruption.budgets[0].duration"}
	for _, s := range skipped {
		field, ok := want[s.NodePool.Name]
		if !ok {
			t.Errorf("NodePool %s skipped: %s", s.NodePool.Name, s.Message)
			continue
		}
		delete(want, s.NodePool.Name)
		if s.Reason != ReasonDurationTooLong || !strings.Contains(s.Message, field) || !strings.Contains(s.Message, "2562047h") {
			t.Errorf("NodePool %s skipped with %s: %q; want %s naming %s and the bound", s.NodePool.Name, s.Reason, s.Message, ReasonDurationTooLong, field)
		}
	}
	if len(want) > 0 {
		t.Errorf("NodePools not left out: %v", want)
	}
}
