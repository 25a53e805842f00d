package snapshot

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// docs splits a file into its documents.
func docs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, part := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(part), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, part)
		}
		out = append(out, m)
	}
	return out
}

// written returns the documents of every file by kind/namespace/name, and
// the names of the files.
func written(t *testing.T, r *Result) (map[string]map[string]any, []string) {
	t.Helper()
	byKey := map[string]map[string]any{}
	var names []string
	for _, f := range r.Files {
		names = append(names, f.Name)
		for _, d := range docs(t, f.Data) {
			byKey[key(d)] = d
		}
	}
	return byKey, names
}

func key(d map[string]any) string {
	m, _ := d["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	if ns != "" {
		return d["kind"].(string) + "/" + ns + "/" + name
	}
	return d["kind"].(string) + "/" + name
}

// get walks a document along keys (and list indexes).
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func build(t *testing.T, c *Cluster, opts Options) *Result {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = testNow
	}
	r, err := Build(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildGolden(t *testing.T) {
	r := build(t, testCluster(), Options{})
	dir := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := Write(dir, r.Files); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(r.Summary("snap")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (run go test ./snapshot -update once)", err)
	}
	want := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want[e.Name()] = data
	}
	got := map[string][]byte{"summary.txt": []byte(r.Summary("snap") + "\n")}
	for _, f := range r.Files {
		got[f.Name] = f.Data
	}
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s differs from testdata/golden (go test ./snapshot -update rewrites it):\n%s", name, got[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not in testdata/golden", name)
		}
	}
}

func TestBuildObjects(t *testing.T) {
	r := build(t, testCluster(), Options{})
	objs, names := written(t, r)
	wantFiles := []string{FileScenario, FileNodeClasses, FileNodePools, FileNodeClaims, FileNodes, FilePolicies, FileVolumes, FileWorkloads, FilePods}
	if !slices.Equal(names, wantFiles) {
		t.Errorf("files %v, want %v", names, wantFiles)
	}

	present := []string{
		"NodePool/default", "EC2NodeClass/custom", "EC2NodeClass/default", "NodeClaim/default-abcde",
		"Node/ip-10-0-1-1.us-west-2.compute.internal", "PriorityClass/high", "PodDisruptionBudget/shop/web",
		"PersistentVolume/pv-db", "PersistentVolumeClaim/shop/data-db-0",
		"DaemonSet/kube-system/aws-node", "StatefulSet/shop/db", "ReplicaSet/shop/web-5d8f7", "ReplicaSet/shop/canary-77c9d", "Job/batch/report",
		"Pod/shop/web-5d8f7-aaaaa", "Pod/shop/web-5d8f7-bbbbb", "Pod/kube-system/aws-node-xyz", "Pod/shop/db-0",
	}
	absent := map[string]string{
		"NodeClaim/default-zzzzz":                     "a NodeClaim being deleted",
		"Node/ip-10-0-9-9.us-west-2.compute.internal": "a Node being deleted",
		"PriorityClass/system-node-critical":          "a built-in PriorityClass",
		"PersistentVolume/pv-released":                "a volume bound to no claim",
		"ReplicaSet/shop/web-1a2b3":                   "a ReplicaSet scaled to zero",
		"Job/batch/report-old":                        "a completed Job",
		"Job/batch/report-failed":                     "a failed Job",
		"Pod/batch/report-old-1":                      "a Succeeded pod",
		"Pod/batch/report-failed-1":                   "a Failed pod",
		"Pod/kube-system/kube-proxy-ip-10-0-1-1":      "a mirror pod",
		"Pod/shop/web-5d8f7-old":                      "a pod being deleted",
		"Deployment/shop/web":                         "a Deployment",
		"Namespace/shop":                              "a Namespace",
	}
	for _, k := range present {
		if objs[k] == nil {
			t.Errorf("%s is not written", k)
		}
	}
	for k, what := range absent {
		if objs[k] != nil {
			t.Errorf("%s is written: %s should be left out", k, what)
		}
	}

	tests := []struct {
		name string
		key  string
		path []any
		want any // nil: the field is absent
	}{
		{"the Deployment's ReplicaSet loses its owner reference", "ReplicaSet/shop/web-5d8f7", []any{"metadata", "ownerReferences"}, nil},
		{"the Deployment's ReplicaSet keeps its replicas", "ReplicaSet/shop/web-5d8f7", []any{"spec", "replicas"}, float64(2)},
		{"another owner is kept", "ReplicaSet/shop/canary-77c9d", []any{"metadata", "ownerReferences", 0, "kind"}, "Rollout"},
		{"workload status is dropped", "ReplicaSet/shop/web-5d8f7", []any{"status"}, nil},
		{"pods keep their owner", "Pod/shop/web-5d8f7-aaaaa", []any{"metadata", "ownerReferences", 0, "uid"}, "uid-rs-web"},
		{"pods keep their node", "Pod/shop/web-5d8f7-aaaaa", []any{"spec", "nodeName"}, "ip-10-0-1-1.us-west-2.compute.internal"},
		{"pod status is its phase", "Pod/shop/web-5d8f7-aaaaa", []any{"status", "phase"}, "Running"},
		{"and its conditions", "Pod/shop/web-5d8f7-aaaaa", []any{"status", "conditions", 0, "type"}, "Ready"},
		{"and nothing else", "Pod/shop/web-5d8f7-aaaaa", []any{"status", "podIP"}, nil},
		{"pods lose their creation time", "Pod/shop/web-5d8f7-aaaaa", []any{"metadata", "creationTimestamp"}, nil},
		{"uids are kept", "Pod/shop/web-5d8f7-aaaaa", []any{"metadata", "uid"}, "uid-pod-web-a"},
		{"resourceVersion is dropped", "Pod/shop/web-5d8f7-aaaaa", []any{"metadata", "resourceVersion"}, nil},
		{"managedFields are dropped", "NodePool/default", []any{"metadata", "managedFields"}, nil},
		{"generation is dropped", "NodePool/default", []any{"metadata", "generation"}, nil},
		{"last-applied is dropped", "NodePool/default", []any{"metadata", "annotations"}, nil},
		{"NodePool status is dropped", "NodePool/default", []any{"status"}, nil},
		{"NodePool spec is kept", "NodePool/default", []any{"spec", "disruption", "consolidateAfter"}, "1m"},
		{"NodePools have no creation time", "NodePool/default", []any{"metadata", "creationTimestamp"}, nil},
		{"EC2NodeClass status is dropped", "EC2NodeClass/default", []any{"status"}, nil},
		{"NodeClaims keep their creation time", "NodeClaim/default-abcde", []any{"metadata", "creationTimestamp"}, "2026-02-28T10:00:00Z"},
		{"NodeClaims keep their finalizers", "NodeClaim/default-abcde", []any{"metadata", "finalizers", 0}, "karpenter.sh/termination"},
		{"NodeClaims keep their owner", "NodeClaim/default-abcde", []any{"metadata", "ownerReferences", 0, "uid"}, "uid-pool"},
		{"NodeClaims keep their status", "NodeClaim/default-abcde", []any{"status", "providerID"}, "aws:///us-west-2a/i-0123456789abcdef0"},
		{"NodeClaims keep their image", "NodeClaim/default-abcde", []any{"status", "imageID"}, "ami-0000000000000a001"},
		{"NodeClaims keep their conditions", "NodeClaim/default-abcde", []any{"status", "conditions", 3, "type"}, "Ready"},
		{"Nodes keep their creation time", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"metadata", "creationTimestamp"}, "2026-02-28T10:00:00Z"},
		{"Nodes lose the ttl annotation", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"metadata", "annotations", annotationNodeTTL}, nil},
		{"Nodes lose volumes annotations", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"metadata", "annotations", "volumes.kubernetes.io/controller-managed-attach-detach"}, nil},
		{"Nodes keep other annotations", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"metadata", "annotations", "karpenter.sh/nodepool-hash"}, "123"},
		{"Nodes keep their taints", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"spec", "taints", 0, "key"}, "dedicated"},
		{"Nodes lose their pod CIDR", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"spec", "podCIDR"}, nil},
		{"Node conditions keep their reason", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"status", "conditions", 0, "reason"}, "KubeletReady"},
		{"Node conditions lose their heartbeat", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"status", "conditions", 0, "lastHeartbeatTime"}, nil},
		{"Nodes keep their allocatable", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"status", "allocatable", "cpu"}, "1930m"},
		{"Nodes keep their kubelet version", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"status", "nodeInfo", "kubeletVersion"}, "v1.33.4-eks-1234"},
		{"Nodes lose their images", "Node/ip-10-0-1-1.us-west-2.compute.internal", []any{"status", "images"}, nil},
		{"PriorityClasses keep their value", "PriorityClass/high", []any{"value"}, float64(1000)},
		{"PDBs keep their spec", "PodDisruptionBudget/shop/web", []any{"spec", "minAvailable"}, float64(1)},
		{"PDBs lose their status", "PodDisruptionBudget/shop/web", []any{"status"}, nil},
		{"StatefulSets keep their claim templates", "StatefulSet/shop/db", []any{"spec", "volumeClaimTemplates", 0, "metadata", "name"}, "data"},
		{"volumes keep their zone", "PersistentVolume/pv-db", []any{"spec", "nodeAffinity", "required", "nodeSelectorTerms", 0, "matchExpressions", 0, "values", 0}, "us-west-2a"},
		{"claims keep their volume", "PersistentVolumeClaim/shop/data-db-0", []any{"spec", "volumeName"}, "pv-db"},
		{"claims keep their phase only", "PersistentVolumeClaim/shop/data-db-0", []any{"status", "capacity"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := objs[tc.key]
			if d == nil {
				t.Fatalf("%s is not written", tc.key)
			}
			if got := get(d, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %v = %#v, want %#v", tc.key, tc.path, got, tc.want)
			}
		})
	}
}

func TestBuildScenario(t *testing.T) {
	r := build(t, testCluster(), Options{Duration: "6h"})
	objs, _ := written(t, r)
	sc := objs["Scenario/"+ScenarioName]
	if sc == nil {
		t.Fatal("no Scenario written")
	}
	if sc["apiVersion"] != "stevedore.io/v1alpha1" {
		t.Errorf("apiVersion %v", sc["apiVersion"])
	}
	tests := []struct {
		path []any
		want any
	}{
		{[]any{"spec", "start"}, "2026-03-02T10:00:00Z"},
		{[]any{"spec", "duration"}, "6h"},
		{[]any{"spec", "cluster", "name"}, "demo"},
		{[]any{"spec", "cluster", "kubernetesVersion"}, "1.33"},
		{[]any{"spec", "aws", "region"}, "us-west-2"},
		{[]any{"spec", "aws", "zones"}, []any{"us-west-2a", "us-west-2b"}},
		// Subnets sorted by ID; subnet-0a is listed by both classes, so it
		// carries the tags of both classes' terms, "*" as "snapshot".
		{[]any{"spec", "aws", "subnets", 0}, map[string]any{"id": "subnet-0a", "zone": "us-west-2a",
			"tags": map[string]any{"karpenter.sh/discovery": "demo", "tier": wildcardValue}}},
		{[]any{"spec", "aws", "subnets", 1}, map[string]any{"id": "subnet-0b", "zone": "us-west-2b",
			"tags": map[string]any{"karpenter.sh/discovery": "demo"}}},
		{[]any{"spec", "aws", "subnets", 2}, nil},
		// sg-02 is selected by ID: no tags needed.
		{[]any{"spec", "aws", "securityGroups"}, []any{
			map[string]any{"id": "sg-01", "name": "demo-nodes", "tags": map[string]any{"karpenter.sh/discovery": "demo"}},
			map[string]any{"id": "sg-02", "name": "custom"},
		}},
		{[]any{"spec", "aws", "currentImages"}, []any{
			map[string]any{"alias": "al2023", "arch": "arm64", "variant": "standard", "id": "ami-0000000000000a002", "name": "amazon-eks-node-al2023-arm64-standard-1.33-v20260220"},
			map[string]any{"alias": "al2023", "arch": "x86_64", "variant": "neuron", "id": "ami-0000000000000a004", "name": "amazon-eks-node-al2023-x86_64-neuron-1.33-v20260220"},
			map[string]any{"alias": "al2023", "arch": "x86_64", "variant": "nvidia", "id": "ami-0000000000000a003", "name": "amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260220"},
			map[string]any{"alias": "al2023", "arch": "x86_64", "variant": "standard", "id": "ami-0000000000000a001", "name": "amazon-eks-node-al2023-x86_64-standard-1.33-v20260220"},
		}},
		{[]any{"spec", "aws", "images"}, []any{
			map[string]any{"id": "ami-0000000000000c001", "name": "team-al2023-arm64", "arch": "arm64", "owner": "123456789012",
				"tags": map[string]any{"os": "al2023", "team": wildcardValue}},
		}},
		{[]any{"spec", "aws", "instanceTypes"}, nil},
	}
	for _, tc := range tests {
		if got := get(sc, tc.path...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Scenario %v = %#v, want %#v", tc.path, got, tc.want)
		}
	}
	if !strings.HasPrefix(string(r.Files[0].Data), "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\n") {
		t.Errorf("scenario.yaml does not start with apiVersion and kind:\n%s", r.Files[0].Data)
	}
}

func TestBuildInference(t *testing.T) {
	discovery := func(values ...string) []awsv1.EC2NodeClass {
		var out []awsv1.EC2NodeClass
		for i, v := range values {
			nc := awsv1.EC2NodeClass{}
			nc.Name = string(rune('a' + i))
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{discoveryTag: v}}, {ID: "subnet-1"}}
			out = append(out, nc)
		}
		return out
	}
	nodes := func(regions ...string) []corev1.Node {
		var out []corev1.Node
		for i, r := range regions {
			n := corev1.Node{}
			n.Name = string(rune('a' + i))
			n.Labels = map[string]string{"topology.kubernetes.io/region": r}
			out = append(out, n)
		}
		return out
	}
	tests := []struct {
		name                    string
		classes                 []awsv1.EC2NodeClass
		nodes                   []corev1.Node
		opts                    Options
		wantCluster, wantRegion string
		wantErr                 []string
	}{
		{name: "inferred", classes: discovery("prod", "prod"), nodes: nodes("eu-west-1", "eu-west-1"), wantCluster: "prod", wantRegion: "eu-west-1"},
		{name: "given wins", classes: discovery("prod"), nodes: nodes("eu-west-1"), opts: Options{ClusterName: "other", Region: "us-east-2"},
			wantCluster: "other", wantRegion: "us-east-2"},
		{name: "a wildcard names no cluster", classes: discovery("*", "prod"), nodes: nodes("eu-west-1"), wantCluster: "prod", wantRegion: "eu-west-1"},
		{name: "no discovery tag", classes: discovery("*"), nodes: nodes("eu-west-1"), wantErr: []string{"no cluster name", "karpenter.sh/discovery", "--cluster-name"}},
		{name: "no node class", nodes: nodes("eu-west-1"), wantErr: []string{"--cluster-name"}},
		{name: "two clusters", classes: discovery("prod", "staging"), nodes: nodes("eu-west-1"), wantErr: []string{"prod, staging", "--cluster-name"}},
		{name: "two clusters, given", classes: discovery("prod", "staging"), nodes: nodes("eu-west-1"), opts: Options{ClusterName: "prod"},
			wantCluster: "prod", wantRegion: "eu-west-1"},
		{name: "no node", classes: discovery("prod"), wantErr: []string{"no region", "topology.kubernetes.io/region", "--region"}},
		{name: "two regions", classes: discovery("prod"), nodes: nodes("eu-west-1", "us-east-1"), wantErr: []string{"eu-west-1, us-east-1", "--region"}},
		{name: "no node, given", classes: discovery("prod"), opts: Options{Region: "ap-south-1"}, wantCluster: "prod", wantRegion: "ap-south-1"},
		{name: "bad duration", classes: discovery("prod"), nodes: nodes("eu-west-1"), opts: Options{Duration: "1d"}, wantErr: []string{`"1d"`, "2h"}},
		{name: "negative duration", classes: discovery("prod"), nodes: nodes("eu-west-1"), opts: Options{Duration: "-1h"}, wantErr: []string{"positive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Now = testNow
			r, err := Build(&Cluster{NodeClasses: tc.classes, Nodes: tc.nodes}, opts)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := docs(t, r.Files[0].Data)[0]
			if got := get(sc, "spec", "cluster", "name"); got != tc.wantCluster {
				t.Errorf("cluster name %v, want %s", got, tc.wantCluster)
			}
			if got := get(sc, "spec", "aws", "region"); got != tc.wantRegion {
				t.Errorf("region %v, want %s", got, tc.wantRegion)
			}
			if got := get(sc, "spec", "duration"); got != DefaultDuration && opts.Duration == "" {
				t.Errorf("duration %v, want the default %s", got, DefaultDuration)
			}
		})
	}
}

func TestBuildNeedsTime(t *testing.T) {
	if _, err := Build(testCluster(), Options{}); err == nil {
		t.Error("Build without a time succeeded")
	}
}

func TestSatisfying(t *testing.T) {
	tests := []struct {
		name      string
		terms     []map[string]string
		want      map[string]string
		conflicts int
	}{
		{name: "no terms"},
		{name: "one term", terms: []map[string]string{{"a": "1", "b": "*"}}, want: map[string]string{"a": "1", "b": wildcardValue}},
		{name: "a value satisfies a wildcard", terms: []map[string]string{{"a": "*"}, {"a": "1"}}, want: map[string]string{"a": "1"}},
		{name: "terms add up", terms: []map[string]string{{"a": "1"}, {"b": "2"}}, want: map[string]string{"a": "1", "b": "2"}},
		{name: "the first value wins", terms: []map[string]string{{"a": "1"}, {"a": "2"}, {"a": "1"}}, want: map[string]string{"a": "1"}, conflicts: 1},
		{name: "a glob is its own match", terms: []map[string]string{{"Name": "*private*"}}, want: map[string]string{"Name": "*private*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := satisfying(tc.terms)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tags %v, want %v", got, tc.want)
			}
			if len(conflicts) != tc.conflicts {
				t.Errorf("conflicts %v, want %d", conflicts, tc.conflicts)
			}
		})
	}
}

func TestConflictingTagsAreNoted(t *testing.T) {
	c := testCluster()
	c.NodeClasses[1].Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other"}}}
	r := build(t, c, Options{ClusterName: "demo"})
	if !strings.Contains(r.Summary("snap"), "Subnet subnet-0a: the selector terms that resolved it ask for different values of a tag, karpenter.sh/discovery=demo (written: karpenter.sh/discovery=other)") {
		t.Errorf("the summary does not note the conflict:\n%s", r.Summary("snap"))
	}
}

func TestImageKinds(t *testing.T) {
	tests := []struct {
		name          string
		reqs          []corev1.NodeSelectorRequirement
		arch, variant string
	}{
		{"standard amd64", []corev1.NodeSelectorRequirement{amd64Req, noGPU, noAccel}, "x86_64", "standard"},
		{"standard arm64", []corev1.NodeSelectorRequirement{arm64Req, noGPU, noAccel}, "arm64", "standard"},
		{"nvidia", []corev1.NodeSelectorRequirement{amd64Req, gpu}, "x86_64", "nvidia"},
		{"neuron", []corev1.NodeSelectorRequirement{amd64Req, accelerator}, "x86_64", "neuron"},
		{"no requirements", nil, "", "standard"},
	}
	for _, tc := range tests {
		ami := awsv1.AMI{ID: "ami-1", Requirements: tc.reqs}
		if got := amiArch(ami); got != tc.arch {
			t.Errorf("%s: arch %q, want %q", tc.name, got, tc.arch)
		}
		if got := amiVariant(ami); got != tc.variant {
			t.Errorf("%s: variant %q, want %q", tc.name, got, tc.variant)
		}
	}
}

func TestAliasNotes(t *testing.T) {
	tests := []struct {
		alias   string
		note    string
		current bool
	}{
		{"al2023@latest", "", true},
		{"bottlerocket@latest", "", true},
		{"al2023@v20260220", "pins its images with alias al2023@v20260220", false},
		{"windows2022@latest", "publishes no windows2022 images", false},
	}
	for _, tc := range tests {
		c := testCluster()
		c.NodeClasses[1].Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
		r := build(t, c, Options{})
		objs, _ := written(t, r)
		sc := objs["Scenario/"+ScenarioName]
		hasCustom := strings.Contains(string(r.Files[0].Data), "ami-0000000000000c001")
		if hasCustom != tc.current {
			t.Errorf("%s: the class's image written: %v, want %v", tc.alias, hasCustom, tc.current)
		}
		if tc.current && get(sc, "spec", "aws", "images") != nil {
			t.Errorf("%s: images %v, want none", tc.alias, get(sc, "spec", "aws", "images"))
		}
		if tc.note != "" && !strings.Contains(r.Summary("snap"), tc.note) {
			t.Errorf("%s: the summary does not say %q:\n%s", tc.alias, tc.note, r.Summary("snap"))
		}
	}
}

func TestSummary(t *testing.T) {
	s := build(t, testCluster(), Options{}).Summary("snap")
	for _, w := range []string{
		"Wrote 1 Scenario, 2 EC2NodeClasses, 1 NodePool, 1 NodeClaim, 1 Node, 1 PriorityClass, 1 PodDisruptionBudget, 1 PersistentVolume, 1 PersistentVolumeClaim, 1 DaemonSet, 1 StatefulSet, 2 ReplicaSets, 1 Job, 4 Pods to snap.",
		"1 NodeClaim being deleted (on the way out)", "1 Node being deleted", "1 built-in PriorityClass (",
		"Deployments (in their place, 1 ReplicaSet without the owner reference",
		"2 finished Jobs", "2 finished pods", "1 mirror pod (", "1 pod being deleted", "1 ReplicaSet scaled to zero", "1 PersistentVolume bound to no claim",
		"Namespaces (the simulator creates",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("the summary does not say %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "\n") {
		t.Errorf("the summary is not one paragraph:\n%s", s)
	}
}

// TestBuildDeterministic shuffles every list of the cluster: the bytes must
// not change, and the cluster given must not be reordered.
func TestBuildDeterministic(t *testing.T) {
	want := build(t, testCluster(), Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		c := testCluster()
		shuffle(rng, c.NodeClasses)
		shuffle(rng, c.NodeClaims)
		shuffle(rng, c.Nodes)
		shuffle(rng, c.Pods)
		shuffle(rng, c.ReplicaSets)
		shuffle(rng, c.Jobs)
		shuffle(rng, c.PriorityClasses)
		shuffle(rng, c.PersistentVolumes)
		for j := range c.NodeClasses {
			shuffle(rng, c.NodeClasses[j].Status.Subnets)
			shuffle(rng, c.NodeClasses[j].Status.AMIs)
		}
		before := c.Pods[0].Name
		got := build(t, c, Options{})
		if c.Pods[0].Name != before {
			t.Fatal("Build reordered the cluster it was given")
		}
		if !reflect.DeepEqual(got, want) {
			for k := range want.Files {
				if !bytes.Equal(got.Files[k].Data, want.Files[k].Data) {
					t.Fatalf("shuffle %d: %s differs:\n%s\nwant:\n%s", i, want.Files[k].Name, got.Files[k].Data, want.Files[k].Data)
				}
			}
			t.Fatalf("shuffle %d: the result differs: %+v", i, got)
		}
	}
}

func shuffle[T any](rng *rand.Rand, s []T) {
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}
