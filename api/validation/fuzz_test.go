package validation

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are inputs that have broken YAML, JSON and Kubernetes decoders
// before, or that reach the corners of the validator: odd documents, odd
// types where objects, lists or strings belong, and manifests of the older
// Karpenter APIs with values of the wrong type.
var fuzzSeeds = []string{
	"",
	"---",
	"---\n---\n...\n",
	"null",
	"~\n---\n~\n",
	"[]",
	"{}",
	"- a\n- b\n",
	"\t",
	"\xff\xfe\x00",
	"\ufeffapiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
	"apiVersion: v1\r\nkind: Namespace\r\nmetadata: {name: a}\r\n",
	`{"apiVersion": "v1", "kind": "Namespace"`,
	`{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}} x`,
	`[{"apiVersion": "v1"}]`,
	`{"apiVersion": 1e400}`,
	"apiVersion: 5\nkind: []\n",
	"apiVersion: /\nkind: x\n",
	"apiVersion: a/b/c\nkind: X\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: [x], namespace: {a: b}}\n",
	"apiVersion: v1\nkind: List\nitems: [1, null, {kind: List, items: []}, {apiVersion: v1, kind: List, items: [{apiVersion: v1}]}]\n",
	"apiVersion: v1\nkind: List\nitems: {a: b}\n",
	"kind: FooList\nitems: [{}]\n",
	"a: &a [*a]\n",
	"a: &a {b: *a}\n",
	"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
	"? [a]\n: b\n",
	"1: 2\ntrue: 3\n",
	"<<: {apiVersion: v1, kind: Namespace}\nmetadata: {name: a}\n",
	"a: !!binary zz\n",
	"--- !tag\na: b\n",
	"a: b\na: c\n",
	strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	strings.Repeat("- ", 2000) + "a\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: 1e400, memory: -1}}}]}\n",
	"apiVersion: apps/v7\nkind: Deploymnet\nmetadata: {name: web}\n",
	"apiVersion: app/v1\nkind: Deployment\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
	"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: {spec: {requirements: [{key: 1, operator: null, values: [1, {}]}], nodeClassRef: []}}, disruption: {budgets: [{schedule: 5, duration: []}, 7]}, limits: {cpu: {}}}\n",
	"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: 5\n",
	"apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: x}\nspec: {disruption: {expireAfter: 5, consolidationPolicy: []}, template: {spec: {kubelet: 1, nodeClassRef: {apiVersion: 5}}}}\n",
	"apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: x}\nspec: {ttlSecondsAfterEmpty: x, ttlSecondsUntilExpired: [], consolidation: 5, providerRef: 7, provider: null, limits: {resources: 5}, kubeletConfiguration: []}\n",
	"apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: x}\nspec: []\n",
	"apiVersion: karpenter.sh/v1alpha5\nkind: Machine\n",
	"apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: x}\nspec: {subnetSelector: 5, securityGroupSelector: {aws-ids: 5}, amiSelector: {aws::name: [], aws-ids: ',,'}, amiFamily: 7, launchTemplate: {}}\n",
	"apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec: {amiFamily: AL2023, role: 5, subnetSelectorTerms: 5}\n",
	"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec: {amiSelectorTerms: [{alias: '@'}, {alias: 5}], kubelet: {evictionHard: {a: 5}, evictionSoft: [], kubeReserved: {cpu: []}}, tags: {'': 1}, blockDeviceMappings: [{ebs: 5}, 5]}\n",
	"apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: x}\nspec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ''}, taints: [{key: a, effect: NoSchedule}, {key: a, effect: NoSchedule}], startupTaints: 5}\n",
	"metadata: {name: x}\nspec: {template: {spec: {nodeClassRef: 5}}, amiSelectorTerms: 1}\n",
	"apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: 5\n",
}

// FuzzValidate feeds arbitrary bytes to the decoder and the validator: they
// must not panic, and every problem must say where it is, what is wrong and
// what to do. As a unit test it runs over the seeds: the manifests of
// testdata and examples/, fuzzSeeds, and testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	v := testValidator(f)
	for _, root := range []string{"testdata", filepath.Join("..", "..", "examples")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f.Add(data)
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		problems, err := v.Documents("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		for _, p := range problems {
			if p.Message == "" || p.Fix == "" || !strings.HasPrefix(p.Source, "fuzz.yaml#") ||
				(p.Severity != SeverityError && p.Severity != SeverityWarning) {
				t.Errorf("incomplete problem %#v", p)
			}
			_ = p.String()
		}
	})
}
