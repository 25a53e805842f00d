package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/crds"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/checks"
)

// Objects are the manifests a plan is made from, in the order they were read.
type Objects struct {
	NodePools   []*karpv1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// NodeOverlays adjust the catalog's prices and capacity, as they do
	// with the controller's NodeOverlay feature gate on.
	NodeOverlays []*v1alpha1.NodeOverlay
	// Workloads are Pods, Deployments, ReplicaSets, StatefulSets, Jobs and
	// DaemonSets, and the LimitRanges that give their pods defaults as the
	// API server will when it creates them (see workloads.Expand).
	Workloads []runtime.Object
	// Nodes are existing nodes; pods with spec.nodeName run on them.
	Nodes      []*corev1.Node
	Namespaces []*corev1.Namespace
	// Skipped lists the other objects read, as Kind/name, which a plan does
	// not use (PodDisruptionBudgets, Services, …).
	Skipped []string
	// Owned says the caller read the objects for this plan alone and gives
	// them up: Prepare may then default the Pods among Workloads in place
	// (workloads.ExpandInPlace) instead of holding a copy of each.
	Owned bool
}

// ErrInvalid is returned by Load when validation found errors; the problems
// are returned alongside.
var ErrInvalid = errors.New("the manifests are not valid")

// Load reads manifests from files, directories (searched recursively for
// .yaml, .yml and .json, skipping hidden directories, in lexical order) and
// "-" for stdin, validates them the way `stevedore validate` does, and, when
// no problem is an error, decodes them with the CRD defaults applied to
// NodePools and EC2NodeClasses. It returns every problem found (warnings
// included), and ErrInvalid when any is an error.
func Load(paths []string, stdin io.Reader) (*Objects, []validation.Problem, error) {
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("name the manifests to plan with -f FILE, -f DIR or -f - for standard input")
	}
	v, err := checks.Validator()
	if err != nil {
		return nil, nil, err
	}
	in := validation.NewInput(stdin)
	problems, err := v.PathsFrom(in, paths)
	if err != nil {
		return nil, nil, err
	}
	if validation.HasErrors(problems) {
		return nil, problems, ErrInvalid
	}
	objs := &Objects{}
	for _, p := range paths {
		sources, err := in.Read(p)
		if err != nil {
			return nil, problems, err
		}
		for _, s := range sources {
			if err := objs.Decode(s.Name, s.Data); err != nil {
				return nil, problems, err
			}
		}
	}
	return objs, problems, nil
}

// Decode adds the objects of a stream of YAML documents or JSON values to
// objs. Lists are unpacked. NodePools and EC2NodeClasses get the defaults of
// their CRDs, as the API server would apply them.
func (objs *Objects) Decode(source string, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var obj map[string]interface{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s#%d: %w", source, doc, err)
		}
		if obj == nil {
			continue
		}
		items := []interface{}{obj}
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") {
			if list, ok := obj["items"].([]interface{}); ok {
				items = list
			}
		}
		for _, item := range items {
			m, ok := item.(map[string]interface{})
			if !ok {
				return fmt.Errorf("%s#%d: a list item is not an object", source, doc)
			}
			if err := objs.add(m); err != nil {
				return fmt.Errorf("%s#%d: %w", source, doc, err)
			}
		}
	}
}

func (objs *Objects) add(obj map[string]interface{}) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	var target runtime.Object
	switch gvk {
	case karpv1.GroupVersion.WithKind("NodePool"):
		np := &karpv1.NodePool{}
		target = np
		defer func() { objs.NodePools = append(objs.NodePools, np) }()
	case awsv1.GroupVersion.WithKind("EC2NodeClass"):
		nc := &awsv1.EC2NodeClass{}
		target = nc
		defer func() { objs.NodeClasses = append(objs.NodeClasses, nc) }()
	case v1alpha1.GroupVersion.WithKind("NodeOverlay"):
		o := &v1alpha1.NodeOverlay{}
		target = o
		defer func() { objs.NodeOverlays = append(objs.NodeOverlays, o) }()
	case corev1.SchemeGroupVersion.WithKind("Node"):
		n := &corev1.Node{}
		target = n
		defer func() { objs.Nodes = append(objs.Nodes, n) }()
	case corev1.SchemeGroupVersion.WithKind("Namespace"):
		ns := &corev1.Namespace{}
		target = ns
		defer func() { objs.Namespaces = append(objs.Namespaces, ns) }()
	case corev1.SchemeGroupVersion.WithKind("Pod"):
		target = &corev1.Pod{}
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		target = &appsv1.Deployment{}
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):
		target = &appsv1.ReplicaSet{}
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		target = &appsv1.StatefulSet{}
	case appsv1.SchemeGroupVersion.WithKind("DaemonSet"):
		target = &appsv1.DaemonSet{}
	case batchv1.SchemeGroupVersion.WithKind("Job"):
		target = &batchv1.Job{}
	case corev1.SchemeGroupVersion.WithKind("LimitRange"):
		target = &corev1.LimitRange{}
	default:
		name := ""
		if meta, ok := obj["metadata"].(map[string]interface{}); ok {
			name, _ = meta["name"].(string)
		}
		objs.Skipped = append(objs.Skipped, kind+"/"+name)
		return nil
	}
	if gvk.Group == karpv1.GroupVersion.Group || gvk.Group == awsv1.GroupVersion.Group {
		if err := applyCRDDefaults(gvk, obj); err != nil {
			return err
		}
	}
	// A duration too long for Go fails the decoding below with no field
	// named: say which field, and what to write instead.
	if ps := validation.DurationProblems(kind, obj); len(ps) > 0 {
		var msgs []string
		for _, p := range ps {
			msgs = append(msgs, fmt.Sprintf("%s: %s; fix: %s", p.Field, p.Message, p.Fix))
		}
		return fmt.Errorf("decoding %s: %s", kind, strings.Join(msgs, "; "))
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, target); err != nil {
		return fmt.Errorf("decoding %s: %w", kind, err)
	}
	switch target.(type) {
	case *karpv1.NodePool, *awsv1.EC2NodeClass, *v1alpha1.NodeOverlay, *corev1.Node, *corev1.Namespace:
	default:
		objs.Workloads = append(objs.Workloads, target)
	}
	return nil
}

// crdSchemas are the structural schemas of the served CRD versions, with
// their defaults, for defaulting.
var crdSchemas = sync.OnceValues(func() (map[schema.GroupVersionKind]*structuralschema.Structural, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]*structuralschema.Structural{}
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			internal := &apiextensions.CustomResourceValidation{}
			if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = s
		}
	}
	return out, nil
})

// applyCRDDefaults sets, in place, the defaults that the CRD of gvk declares.
func applyCRDDefaults(gvk schema.GroupVersionKind, obj map[string]interface{}) error {
	schemas, err := crdSchemas()
	if err != nil {
		return err
	}
	if s, ok := schemas[gvk]; ok {
		structuraldefaulting.Default(obj, s)
	}
	return nil
}
