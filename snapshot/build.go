package snapshot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// DefaultDuration is the simulated time a snapshot's Scenario runs for when
// Options.Duration is empty.
const DefaultDuration = "2h"

// The files a snapshot holds, in the order Build returns them.
const (
	FileScenario    = "scenario.yaml"
	FileNodeClasses = "ec2nodeclasses.yaml"
	FileNodePools   = "nodepools.yaml"
	FileNodeClaims  = "nodeclaims.yaml"
	FileNodes       = "nodes.yaml"
	FilePolicies    = "policies.yaml"
	FileVolumes     = "volumes.yaml"
	FileWorkloads   = "workloads.yaml"
	FilePods        = "pods.yaml"
)

// ScenarioName is the metadata.name of a snapshot's Scenario.
const ScenarioName = "snapshot"

// Options shape a snapshot.
type Options struct {
	// Now is the moment of the snapshot and the start of its Scenario.
	Now time.Time
	// ClusterName is the EKS cluster's name; empty infers it from the
	// EC2NodeClasses' karpenter.sh/discovery subnet selectors.
	ClusterName string
	// Region is the AWS region; empty infers it from the nodes'
	// topology.kubernetes.io/region label.
	Region string
	// Duration is how long the Scenario runs, a Go duration (default
	// DefaultDuration).
	Duration string
}

// File is one file of a snapshot: its name in the directory and its bytes.
type File struct {
	Name string
	Data []byte
}

// Count is how many objects of a kind a snapshot holds.
type Count struct {
	Kind string
	N    int
}

// Omission is a group of objects a snapshot leaves out, and why.
type Omission struct {
	// N is how many (0 when the group is not counted, such as Namespaces).
	N int
	// What the objects are ("finished pods"); Why they are left out.
	What, Why string
}

// Result is what Build returns: the files, and an account of what they hold.
type Result struct {
	Files []File
	// Written counts the objects written, by kind, in file order.
	Written []Count
	// LeftOut are the objects read and not written.
	LeftOut []Omission
	// Notes are what the simulation of the snapshot will do differently
	// from the cluster, beyond what is left out.
	Notes []string
}

// Summary renders r as one paragraph for people; dir is where the files
// were written.
func (r *Result) Summary(dir string) string {
	var b strings.Builder
	var written []string
	for _, c := range r.Written {
		written = append(written, plural(c.N, c.Kind))
	}
	b.WriteString("Wrote " + strings.Join(written, ", ") + " to " + dir + ".")
	if len(r.LeftOut) > 0 {
		var left []string
		for _, o := range r.LeftOut {
			s := o.What
			if o.N > 0 {
				s = fmt.Sprintf("%d %s", o.N, o.What)
			}
			left = append(left, s+" ("+o.Why+")")
		}
		b.WriteString(" Left out: " + strings.Join(left, "; ") + ".")
	}
	for _, n := range r.Notes {
		b.WriteString(" " + n)
		if !strings.HasSuffix(n, ".") {
			b.WriteString(".")
		}
	}
	return b.String()
}

func plural(n int, kind string) string {
	if n == 1 {
		return "1 " + kind
	}
	if strings.HasSuffix(kind, "s") {
		return fmt.Sprintf("%d %ses", n, kind)
	}
	return fmt.Sprintf("%d %ss", n, kind)
}

// Annotations that are never written: kubectl's copy of the applied
// manifest, and on Nodes the ones the node's own agents keep.
const (
	annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	annotationNodeTTL     = "node.alpha.kubernetes.io/ttl"
	prefixVolumes         = "volumes.kubernetes.io/"
	annotationMirror      = "kubernetes.io/config.mirror"
)

// builtinPriorityClasses are those every cluster, the simulated one
// included, has without a manifest (and an API server refuses to create).
var builtinPriorityClasses = []string{"system-cluster-critical", "system-node-critical"}

// builder gathers the documents of each file and the account of them.
type builder struct {
	docs    map[string][]any
	res     *Result
	counts  map[string]int
	kinds   []string
	omitted []Omission
}

func (b *builder) add(file, kind string, doc any) {
	b.docs[file] = append(b.docs[file], doc)
	if _, ok := b.counts[kind]; !ok {
		b.kinds = append(b.kinds, kind)
	}
	b.counts[kind]++
}

// leaveOut records n objects left out; one and many name one and several.
func (b *builder) leaveOut(n int, one, many, why string) {
	switch {
	case n == 1:
		b.omitted = append(b.omitted, Omission{N: n, What: one, Why: why})
	case n > 1:
		b.omitted = append(b.omitted, Omission{N: n, What: many, Why: why})
	}
}

// Build turns a Cluster into the files of a snapshot. It is a pure
// function: the same Cluster and Options give the same bytes, whatever the
// order of the Cluster's lists; c is not modified. It fails when the cluster
// name or the region is neither given nor found in the cluster, and when
// Options are not valid.
func Build(c *Cluster, opts Options) (*Result, error) {
	if opts.Now.IsZero() {
		return nil, errors.New("the snapshot needs its time (Options.Now)")
	}
	if opts.Duration == "" {
		opts.Duration = DefaultDuration
	}
	if d, err := time.ParseDuration(opts.Duration); err != nil || d <= 0 {
		return nil, fmt.Errorf("duration %q: write a positive Go duration such as 2h or 90m", opts.Duration)
	}
	c = sorted(c)
	b := &builder{docs: map[string][]any{}, res: &Result{}, counts: map[string]int{}}
	sc, err := b.scenario(c, opts)
	if err != nil {
		return nil, err
	}
	b.add(FileScenario, "Scenario", sc)
	b.nodeClasses(c)
	b.nodePools(c)
	b.nodeClaims(c)
	b.nodes(c)
	b.policies(c)
	claims := b.volumes(c)
	b.workloads(c)
	b.pods(c, claims)
	if len(c.NotServed) > 0 {
		b.omitted = append(b.omitted, Omission{What: strings.Join(c.NotServed, ", "), Why: "the API server does not serve the kind: its CRD is not installed"})
	}
	b.omitted = append(b.omitted, Omission{What: "Namespaces", Why: "the simulator creates the namespaces the objects live in"})

	res := b.res
	for _, name := range []string{FileScenario, FileNodeClasses, FileNodePools, FileNodeClaims, FileNodes, FilePolicies, FileVolumes, FileWorkloads, FilePods} {
		docs := b.docs[name]
		if len(docs) == 0 {
			continue
		}
		data, err := multiDocument(docs)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
		res.Files = append(res.Files, File{Name: name, Data: data})
	}
	for _, k := range b.kinds {
		res.Written = append(res.Written, Count{Kind: k, N: b.counts[k]})
	}
	res.LeftOut = b.omitted
	return res, nil
}

// multiDocument writes docs as YAML documents separated by "---".
func multiDocument(docs []any) ([]byte, error) {
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		data, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// sorted returns a copy of c with every list sorted by namespace and name.
func sorted(c *Cluster) *Cluster {
	out := *c
	out.NodePools = sortObjects(c.NodePools)
	out.NodeClasses = sortObjects(c.NodeClasses)
	out.NodeClaims = sortObjects(c.NodeClaims)
	out.Nodes = sortObjects(c.Nodes)
	out.Pods = sortObjects(c.Pods)
	out.PodDisruptionBudgets = sortObjects(c.PodDisruptionBudgets)
	out.DaemonSets = sortObjects(c.DaemonSets)
	out.StatefulSets = sortObjects(c.StatefulSets)
	out.ReplicaSets = sortObjects(c.ReplicaSets)
	out.Jobs = sortObjects(c.Jobs)
	out.PriorityClasses = sortObjects(c.PriorityClasses)
	out.PersistentVolumeClaims = sortObjects(c.PersistentVolumeClaims)
	out.PersistentVolumes = sortObjects(c.PersistentVolumes)
	out.NotServed = slices.Sorted(slices.Values(c.NotServed))
	return &out
}

// sortObjects returns a copy of items sorted by namespace and name.
func sortObjects[T any, P interface {
	*T
	metav1.Object
}](items []T) []T {
	type key struct {
		namespace, name string
		i               int
	}
	keys := make([]key, len(items))
	for i := range items {
		o := P(&items[i])
		keys[i] = key{o.GetNamespace(), o.GetName(), i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name), cmp.Compare(a.i, b.i))
	})
	out := make([]T, len(items))
	for i, k := range keys {
		out[i] = items[k.i]
	}
	return out
}
