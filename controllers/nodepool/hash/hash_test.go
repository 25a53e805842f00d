package hash

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

func base() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Metadata: karpv1.NodeClaimTemplateMetadata{
					Labels:      map[string]karpv1.LabelValue{"team": "a"},
					Annotations: map[string]string{"example.com/owner": "a"},
				},
				Spec: karpv1.NodeClaimTemplateSpec{
					Taints: []corev1.Taint{
						{Key: "b", Effect: corev1.TaintEffectNoSchedule},
						{Key: "a", Value: "x", Effect: corev1.TaintEffectNoExecute},
					},
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
						Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
					}},
					NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
					ExpireAfter:  karpv1.NewNillableDuration(720 * time.Hour),
				},
			},
		},
	}
}

func TestHash(t *testing.T) {
	want := Hash(base())
	if want == "" || want != Hash(base()) {
		t.Fatalf("hash not stable: %q", want)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*karpv1.NodePool)
		changes bool
	}{
		{"label value", func(np *karpv1.NodePool) { np.Spec.Template.Metadata.Labels["team"] = "b" }, true},
		{"annotation", func(np *karpv1.NodePool) { np.Spec.Template.Metadata.Annotations["x"] = "y" }, true},
		{"taint added", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "c", Effect: corev1.TaintEffectNoSchedule})
		}, true},
		{"taint effect", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Effect = corev1.TaintEffectNoExecute }, true},
		{"startup taint", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"taint moved to startup taints", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = np.Spec.Template.Spec.Taints[:1]
			np.Spec.Template.Spec.Taints = np.Spec.Template.Spec.Taints[1:]
		}, true},
		{"node class name", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, true},
		{"expireAfter", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.NeverDuration() }, true},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &karpv1.Duration{Duration: time.Hour}
		}, true},
		{"taint timeAdded", func(np *karpv1.NodePool) {
			now := metav1.Now()
			np.Spec.Template.Spec.Taints[0].TimeAdded = &now
		}, true},

		{"taint order", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}, false},
		{"requirements", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		}, false},
		{"disruption", func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		}, false},
		{"limits and weight", func(np *karpv1.NodePool) {
			np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}
			w := int32(10)
			np.Spec.Weight = &w
		}, false},
		{"NodePool metadata", func(np *karpv1.NodePool) {
			np.Labels = map[string]string{"x": "y"}
			np.Generation = 7
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := base()
			tc.mutate(np)
			if got := Hash(np); (got != want) != tc.changes {
				t.Errorf("hash %s -> %s; want changed=%v", want, got, tc.changes)
			}
		})
	}
}

// TestHashFixtures pins the hash of templates, written as a NodePool's
// spec.template in JSON, to the values Karpenter v1.14.1's NodePool.Hash()
// returns for the same JSON (hash version v3). Equal values in the table are
// templates that must hash alike; any change to the algorithm, the hashed
// type or field names, or the decoding of the template shows up here.
func TestHashFixtures(t *testing.T) {
	if Version != "v3" {
		t.Fatalf("Version = %q; the fixtures below are hash version v3", Version)
	}
	for _, tc := range []struct {
		name     string
		template string
		want     string
	}{
		{"empty template", `{}`, "17307646073972311821"},
		{"empty spec", `{"spec":{}}`, "17307646073972311821"},
		{"defaulted minimal pool", `{"spec":{"requirements":[],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"720h"}}`, "6821555240594823858"},
		{"requirements do not count", `{"spec":{"requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot","on-demand"],"minValues":1},{"key":"kubernetes.io/arch","operator":"Exists"}],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"720h"}}`, "6821555240594823858"},
		{"nodeClassRef other name", `{"spec":{"requirements":[],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"other"},"expireAfter":"720h"}}`, "1124401764309382548"},
		{"nodeClassRef other group and kind", `{"spec":{"nodeClassRef":{"group":"karpenter.test.sh","kind":"TestNodeClass","name":"default"}}}`, "5568174970230275839"},
		{"one label", `{"metadata":{"labels":{"team":"a"}}}`, "3113665849343683558"},
		{"two labels", `{"metadata":{"labels":{"team":"a","env":"prod"}}}`, "9595868209839375714"},
		{"two labels written in the other order", `{"metadata":{"labels":{"env":"prod","team":"a"}}}`, "9595868209839375714"},
		{"label with empty value", `{"metadata":{"labels":{"team":""}}}`, "16557920629696504397"},
		{"empty labels map", `{"metadata":{"labels":{}}}`, "8138694075160263762"},
		{"one annotation", `{"metadata":{"annotations":{"team":"a"}}}`, "775320049255854762"},
		{"empty annotations map", `{"metadata":{"annotations":{}}}`, "6143792149846992658"},
		{"labels and annotations", `{"metadata":{"labels":{"team":"a"},"annotations":{"example.com/owner":"ops"}}}`, "5283749241712949283"},
		{"one taint", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "17231674795969233976"},
		{"one taint without value", `{"spec":{"taints":[{"key":"dedicated","effect":"NoSchedule"}]}}`, "12081329085175755526"},
		{"one taint other effect", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoExecute"}]}}`, "4211402141637216922"},
		{"two taints", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"},{"key":"spot","effect":"PreferNoSchedule"}]}}`, "4174609772329964757"},
		{"two taints in the other order", `{"spec":{"taints":[{"key":"spot","effect":"PreferNoSchedule"},{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "4174609772329964757"},
		{"the same taint twice", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"},{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "5137148602344353791"},
		{"empty taints list", `{"spec":{"taints":[]}}`, "5137148602344353791"},
		{"one startup taint", `{"spec":{"startupTaints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "15155816894487001146"},
		{"two startup taints in the other order", `{"spec":{"startupTaints":[{"key":"spot","effect":"PreferNoSchedule"},{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "2775072215349595357"},
		{"two startup taints", `{"spec":{"startupTaints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"},{"key":"spot","effect":"PreferNoSchedule"}]}}`, "2775072215349595357"},
		{"taint and startup taint", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}],"startupTaints":[{"key":"spot","effect":"PreferNoSchedule"}]}}`, "11716876092707358559"},
		{"taint and startup taint swapped", `{"spec":{"taints":[{"key":"spot","effect":"PreferNoSchedule"}],"startupTaints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`, "18383513356901859518"},
		{"expireAfter 720h", `{"spec":{"expireAfter":"720h"}}`, "14193706301438959238"},
		{"expireAfter 30d in hours", `{"spec":{"expireAfter":"719h60m"}}`, "14193706301438959238"},
		{"expireAfter 1h30m", `{"spec":{"expireAfter":"1h30m"}}`, "14896503211610888108"},
		{"expireAfter 90m", `{"spec":{"expireAfter":"90m"}}`, "14896503211610888108"},
		{"expireAfter 0s", `{"spec":{"expireAfter":"0s"}}`, "8618614044321057158"},
		{"expireAfter Never", `{"spec":{"expireAfter":"Never"}}`, "17307646073972311821"},
		{"terminationGracePeriod 48h", `{"spec":{"terminationGracePeriod":"48h"}}`, "3232297272577231313"},
		{"terminationGracePeriod 30s", `{"spec":{"terminationGracePeriod":"30s"}}`, "15275670581781096280"},
		{"terminationGracePeriod 0s", `{"spec":{"terminationGracePeriod":"0s"}}`, "4910602586594008009"},
		{"full template", `{"metadata":{"labels":{"team":"a","env":"prod"},"annotations":{"example.com/owner":"ops"}},"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}],"startupTaints":[{"key":"node.example.com/init","effect":"NoExecute"}],"requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"336h","terminationGracePeriod":"24h"}}`, "15338367060760925986"},
		{"full template, other requirements", `{"metadata":{"labels":{"team":"a","env":"prod"},"annotations":{"example.com/owner":"ops"}},"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}],"startupTaints":[{"key":"node.example.com/init","effect":"NoExecute"}],"requirements":[{"key":"node.kubernetes.io/instance-type","operator":"NotIn","values":["m5.large"]},{"key":"karpenter.k8s.aws/instance-cpu","operator":"Gt","values":["4"]}],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"336h","terminationGracePeriod":"24h"}}`, "15338367060760925986"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &karpv1.NodePool{}
			if err := json.Unmarshal([]byte(`{"spec":{"template":`+tc.template+`}}`), np); err != nil {
				t.Fatal(err)
			}
			if got := Hash(np); got != tc.want {
				t.Errorf("Hash(%s) = %s, want %s", tc.template, got, tc.want)
			}
		})
	}
}

// TestHashFixturesBuilt pins templates that are easier to build in Go than
// to write in JSON, against the same function of Karpenter as
// TestHashFixtures.
func TestHashFixturesBuilt(t *testing.T) {
	// A decoded timeAdded is in the process's local time zone, and the hash
	// covers the zone's offset; a fixed zone at offset zero is what a
	// controller running in UTC decodes, and keeps the test independent of
	// the machine's zone.
	added := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("", 0)))
	for _, tc := range []struct {
		name string
		spec karpv1.NodeClaimTemplateSpec
		want string
	}{
		{"nothing set", karpv1.NodeClaimTemplateSpec{}, "17307646073972311821"},
		{"expireAfter Never", karpv1.NodeClaimTemplateSpec{ExpireAfter: karpv1.NeverDuration()}, "17307646073972311821"},
		{"expireAfter 720h", karpv1.NodeClaimTemplateSpec{ExpireAfter: karpv1.NewNillableDuration(720 * time.Hour)}, "14193706301438959238"},
		{"taint with timeAdded", karpv1.NodeClaimTemplateSpec{Taints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added},
		}}, "3237204326727063105"},
		{"requirements only", karpv1.NodeClaimTemplateSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
			Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
		}}}, "17307646073972311821"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: tc.spec}}}
			if got := Hash(np); got != tc.want {
				t.Errorf("Hash = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHashConcurrent hashes NodePools from several goroutines at once, as
// the provisioner, the disruption controller and the NodePool status
// controller do, and wants each hash to be the value Karpenter computes for
// the template (the same as in TestHashFixtures) however the calls overlap.
// A hash that depends on what else is being hashed at the moment stamps a
// NodeClaim with a value its NodePool never had, and drifts it.
func TestHashConcurrent(t *testing.T) {
	pools := []struct {
		name     string
		template string
		want     string
	}{
		{"defaulted minimal pool", `{"spec":{"requirements":[],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"720h"}}`, "6821555240594823858"},
		{"labels and annotations", `{"metadata":{"labels":{"team":"a"},"annotations":{"example.com/owner":"ops"}}}`, "5283749241712949283"},
		{"two taints", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"},{"key":"spot","effect":"PreferNoSchedule"}]}}`, "4174609772329964757"},
		{"full template", `{"metadata":{"labels":{"team":"a","env":"prod"},"annotations":{"example.com/owner":"ops"}},"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}],"startupTaints":[{"key":"node.example.com/init","effect":"NoExecute"}],"requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"336h","terminationGracePeriod":"24h"}}`, "15338367060760925986"},
	}
	nps := make([]*karpv1.NodePool, len(pools))
	for i, p := range pools {
		nps[i] = &karpv1.NodePool{}
		if err := json.Unmarshal([]byte(`{"spec":{"template":`+p.template+`}}`), nps[i]); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, rounds = 8, 2000
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		wrong = make([]int, len(pools))
	)
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for r := range rounds {
				i := (g + r) % len(pools)
				if Hash(nps[i]) != pools[i].want {
					mu.Lock()
					wrong[i]++
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, p := range pools {
		if wrong[i] > 0 {
			t.Errorf("%s: %d of %d hashes computed alongside others differ from %s", p.name, wrong[i], goroutines*rounds/len(pools), p.want)
		}
	}
}
