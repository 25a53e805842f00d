package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/checks"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/plan"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
)

// ErrInvalid is returned by Load when a problem is an error; the problems are
// returned alongside.
var ErrInvalid = errors.New("the scenario or its manifests are not valid")

// Run is a scenario ready to run, every default resolved.
type Run struct {
	// Name is the scenario's name; without a Scenario, the first path's base
	// name.
	Name string
	// Source is where the Scenario was read ("" when there was none).
	Source   string
	Seed     uint64
	Start    time.Time
	Duration time.Duration
	// SampleEvery is the resolution of the time series.
	SampleEvery       time.Duration
	ClusterName       string
	KubernetesVersion string
	// PodStartTime is the time from a pod's binding to its readiness.
	PodStartTime time.Duration
	// KubeAPIQPS and KubeAPIBurst are kube-controller-manager's client
	// settings.
	KubeAPIQPS   float64
	KubeAPIBurst int
	AWS          AWSConfig
	Controller   ControllerConfig
	// Objects are the manifests, in the order they are applied at the
	// start: namespaces (including those only referenced), priority and
	// storage classes, node classes, node pools, nodes, volumes, budgets,
	// workloads, then the rest, each group in the order read.
	Objects []Object
	// Events in time order (ties in the order written).
	Events []TimedEvent
	// Skipped are documents of kinds the simulator does not know, as
	// Kind/name.
	Skipped []string
	// Annotations are the Scenario's metadata.annotations.
	Annotations map[string]string
}

// The controller policies a scenario can enforce (spec.aws.controllerPolicy).
const (
	ControllerPolicyKarpenter = "Karpenter"
	ControllerPolicyGenerated = "Generated"
)

// AWSConfig is the simulated account with its defaults resolved.
type AWSConfig struct {
	Region         string
	Zones          []string
	Subnets        []Subnet
	SecurityGroups []SecurityGroup
	Images         []ImageConfig
	// CurrentImages are released at the start, after the generated
	// releases, so that <family>@latest resolves to them.
	CurrentImages []ReleaseImage
	// Roles are every IAM role to create, sorted.
	Roles []string
	// PassRole and AccessEntries are nil for "every role".
	PassRole      []string
	AccessEntries []string
	// ControllerPolicy is ControllerPolicyKarpenter,
	// ControllerPolicyGenerated or empty.
	ControllerPolicy  string
	InterruptionQueue string
	InstanceTypes     []string
	BootTime          time.Duration
	ReadyTime         time.Duration
	SpotPriceFraction float64
	PlacementGroups   []PlacementGroup
	// CapacityReservations are created in the account at the start.
	CapacityReservations []CapacityReservationConfig
}

// CapacityReservationConfig is a capacity reservation to create, its
// defaults resolved.
type CapacityReservationConfig struct {
	// ID is empty for one the account generates.
	ID, InstanceType, Zone string
	Count                  int
	// Type is default or capacity-block; InstanceMatchCriteria targeted or
	// open.
	Type, InstanceMatchCriteria string
	// End is zero for a reservation without an end.
	End           time.Time
	Interruptible bool
	Tags          map[string]string
}

// ImageConfig is an image to register.
type ImageConfig struct {
	ID, Name, Arch, Owner string
	Created               time.Time
	Tags                  map[string]string
	// Auto is set for images registered because a node class or an event
	// names their ID.
	Auto bool
}

// ControllerConfig are the controller's settings.
type ControllerConfig struct {
	Settings         settings.Settings
	BatchIdle        time.Duration
	BatchMax         time.Duration
	PreferencePolicy packer.PreferencePolicy
	// EqualWeightOrder (controller setting nodepool-equal-weight-order)
	// says which of several NodePools of the same weight launches a new
	// node; default packer.EqualWeightName, Karpenter's order.
	EqualWeightOrder packer.EqualWeightOrder
	// MinValuesPolicy (controller setting min-values-policy) is Strict
	// (the default) or BestEffort, as for the controller.
	MinValuesPolicy packer.MinValuesPolicy
	// Feature gates (controller setting feature-gates, as Karpenter's
	// --feature-gates: "NodeRepair=true,SpotToSpotConsolidation=true").
	NodeRepair     bool
	SpotToSpot     bool
	StaticCapacity bool
	// NodeOverlay applies the scenario's NodeOverlays to the instance
	// types and runs their status controller.
	NodeOverlay bool
	// CapacityBuffer makes the manifests' CapacityBuffers act.
	CapacityBuffer bool
	// ReservedCapacity launches into the capacity reservations node classes
	// select (default true, as in Karpenter).
	ReservedCapacity bool
	// The disruption, repair and interruption settings.
	ValidationDelay     time.Duration
	ReplacementTimeout  time.Duration
	MaxUnhealthyPercent int
	ActOnRebalance      bool
	// MaxConsolidationCandidates caps the candidates multi-node
	// consolidation considers (0, the default: no cap). No scenario setting
	// sets it: the consolidation benchmark sets it to 100 to compare with a
	// search capped as Karpenter's is.
	MaxConsolidationCandidates int
}

// featureGates are the feature gates a scenario may set; ignoredGates are
// Karpenter's gates that stevedore accepts and ignores (it behaves as if they
// were on), as `stevedore controller` does.
var (
	featureGates = []string{"CapacityBuffer", "NodeOverlay", "NodeRepair", "ReservedCapacity", "SpotToSpotConsolidation", "StaticCapacity"}
	ignoredGates = []string{}
)

// Object is a manifest.
type Object struct {
	// Source is the file and document it came from, e.g. "a.yaml#2".
	Source string
	Object client.Object
	GVK    schema.GroupVersionKind
}

// TimedEvent is an event of the scenario, checked and decoded.
type TimedEvent struct {
	At time.Duration
	// Index is the event's position in spec.events.
	Index int
	// Kind is the event's kind as written (apply, delete, ...).
	Kind  string
	Event Event
	// Object is the decoded object of an apply event.
	Object client.Object
	// GVK is the kind an apply, delete, scale or patch event acts on.
	GVK schema.GroupVersionKind
	// For is an insufficientCapacity event's length (to the end of the run
	// when it sets none), or an awsFault's window (zero when it counts
	// calls).
	For time.Duration
}

// Field returns the event's path in the Scenario, e.g. spec.events[2].
func (e TimedEvent) Field() string { return fmt.Sprintf("spec.events[%d]", e.Index) }

// loader gathers problems while reading.
type loader struct {
	scheme   *runtime.Scheme
	decoder  runtime.Decoder
	problems []validation.Problem
	// source and name of the Scenario, for its problems.
	scSource, scName string
	// unknownKind are the events that have a kind the loader does not
	// know, so that "the event does nothing" is not said of them too.
	unknownKind map[string]bool
}

func (l *loader) fail(source, kind, name, field, msg, fix string) {
	l.problems = append(l.problems, validation.Problem{
		Source: source, Kind: kind, Name: name, Field: field, Message: msg, Fix: fix, Severity: validation.SeverityError,
	})
}

func (l *loader) scenarioError(field, msg, fix string) {
	if strings.HasPrefix(msg, "unknown event kind") {
		if l.unknownKind == nil {
			l.unknownKind = map[string]bool{}
		}
		l.unknownKind[field[:strings.LastIndex(field, ".")]] = true
	}
	l.fail(l.scSource, Kind, l.scName, field, msg, fix)
}

// Load reads the files and directories (searched recursively for .yaml,
// .yml and .json, as `stevedore validate` does) and returns the run they
// describe, with every problem found. When any problem is an error it
// returns ErrInvalid. scheme must know the core, karpenter.sh and
// karpenter.k8s.aws types.
func Load(paths []string, scheme *runtime.Scheme) (*Run, []validation.Problem, error) {
	return LoadFrom(paths, nil, scheme)
}

// LoadFrom is Load with "-" among the paths reading stdin.
func LoadFrom(paths []string, stdin io.Reader, scheme *runtime.Scheme) (*Run, []validation.Problem, error) {
	return LoadChanged(paths, stdin, scheme, nil)
}

// LoadChanged loads a scenario as LoadFrom does, with the events of a
// change (ReadChange) after the Scenario's own: the changed run of a
// what-if.
func LoadChanged(paths []string, stdin io.Reader, scheme *runtime.Scheme, change []Event) (*Run, []validation.Problem, error) {
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("name the scenario: a directory or files with the manifests and at most one Scenario")
	}
	l := &loader{scheme: scheme, decoder: serializer.NewCodecFactory(scheme).UniversalDeserializer()}
	v, err := checks.Validator()
	if err != nil {
		return nil, nil, err
	}
	in := validation.NewInput(stdin)
	problems, err := v.PathsFrom(in, paths)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range problems {
		// The simulator restores a NodeClaim's status with it (a snapshot
		// of a cluster records its launched NodeClaims), where the API
		// server would drop it: not a problem here.
		if p.Kind == "NodeClaim" && p.Field == "status" && p.Severity == validation.SeverityWarning {
			continue
		}
		l.problems = append(l.problems, p)
	}

	var sc *Scenario
	var found []foundScenario
	var objects []Object
	var skipped []string
	for _, p := range paths {
		files, err := in.Read(p)
		if err != nil {
			return nil, nil, err
		}
		for _, file := range files {
			f, data := file.Name, file.Data
			docs, err := documents(f, data)
			if err != nil {
				return nil, nil, err
			}
			for _, d := range docs {
				apiVersion, _ := d.obj["apiVersion"].(string)
				kind, _ := d.obj["kind"].(string)
				if strings.HasPrefix(apiVersion, "stevedore.io/") {
					if kind != Kind || apiVersion != APIVersion {
						continue // the validator reports it
					}
					found = append(found, foundScenario{source: d.source, name: nameOf(d.obj)})
					if sc != nil {
						continue
					}
					sc = l.parseScenario(d.source, d.obj)
					continue
				}
				if len(validation.DurationProblems(kind, d.obj)) > 0 {
					continue // the validator reports it, naming the field
				}
				obj, gvk, err := l.decode(d.obj)
				if err != nil {
					l.fail(d.source, kind, nameOf(d.obj), "", err.Error(), "fix the document so that it decodes as "+apiVersion+" "+kind)
					continue
				}
				if obj == nil {
					skipped = append(skipped, kind+"/"+nameOf(d.obj))
					continue
				}
				objects = append(objects, Object{Source: d.source, Object: obj, GVK: gvk})
			}
		}
	}
	if len(found) > 1 {
		l.severalScenarios(found)
	}
	if sc == nil {
		sc = &Scenario{APIVersion: APIVersion, Kind: Kind}
		sc.Metadata.Name = defaultName(paths)
	}
	sc.Spec.Events = append(sc.Spec.Events, change...)
	run := l.resolve(sc, objects, v)
	run.Skipped = skipped
	if validation.HasErrors(l.problems) {
		return nil, l.problems, ErrInvalid
	}
	return run, l.problems, nil
}

// foundScenario is a Scenario document read, before it is decoded.
type foundScenario struct{ source, name string }

// dir is the directory of the file the Scenario is in.
func (f foundScenario) dir() string {
	file := f.source
	if i := strings.LastIndex(file, "#"); i >= 0 {
		file = file[:i]
	}
	return filepath.Dir(file)
}

// severalScenarios reports that the input holds more than one Scenario. When
// each lives in a directory of its own (a folder of scenarios, such as
// examples/troubleshooting), one problem lists them and says how to run one;
// otherwise each Scenario after the first is a problem.
func (l *loader) severalScenarios(found []foundScenario) {
	dirs := map[string]bool{}
	for _, f := range found {
		dirs[f.dir()] = true
	}
	if len(dirs) < len(found) {
		for _, f := range found[1:] {
			l.fail(f.source, Kind, f.name, "", "a second Scenario (the first is in "+found[0].source+")",
				"give the simulator at most one Scenario")
		}
		return
	}
	list := make([]string, len(found))
	for i, f := range found {
		list[i] = fmt.Sprintf("%s (%s)", f.name, f.dir())
	}
	l.fail(found[1].source, Kind, found[1].name, "",
		fmt.Sprintf("the input holds %d Scenarios, each in a directory of its own: %s", len(found), strings.Join(list, ", ")),
		"simulate one directory at a time, for example: stevedore simulate "+found[0].dir())
}

func defaultName(paths []string) string {
	if paths[0] == "-" {
		return "stdin"
	}
	p := strings.TrimRight(paths[0], "/")
	base := p[strings.LastIndex(p, "/")+1:]
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml"), ".json")
}

func nameOf(obj map[string]any) string {
	if m, ok := obj["metadata"].(map[string]any); ok {
		n, _ := m["name"].(string)
		return n
	}
	return ""
}

type document struct {
	source string
	obj    map[string]any
}

// documents splits a file into its objects, numbered as the validator numbers
// them; List documents are unpacked.
func documents(file string, data []byte) ([]document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []document
	for n := 1; ; n++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s#%d: %w", file, n, err)
		}
		if obj == nil {
			continue
		}
		source := fmt.Sprintf("%s#%d", file, n)
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") {
			if items, ok := obj["items"].([]any); ok {
				for _, it := range items {
					if m, ok := it.(map[string]any); ok {
						out = append(out, document{source: source, obj: m})
					}
				}
				continue
			}
		}
		out = append(out, document{source: source, obj: obj})
	}
}

// decode turns a document into a typed object: NodePools and EC2NodeClasses
// with their CRD defaults applied (by package plan's decoder, the same code
// `stevedore plan` uses), other kinds as the scheme knows them. A kind the
// scheme does not know gives nil.
func (l *loader) decode(m map[string]any) (client.Object, schema.GroupVersionKind, error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	data, err := json.Marshal(m)
	if err != nil {
		return nil, gvk, err
	}
	switch gvk {
	case karpv1.GroupVersion.WithKind("NodePool"), awsv1.GroupVersion.WithKind("EC2NodeClass"):
		objs := &plan.Objects{}
		if err := objs.Decode("", data); err != nil {
			return nil, gvk, err
		}
		if len(objs.NodePools) == 1 {
			return objs.NodePools[0], gvk, nil
		}
		if len(objs.NodeClasses) == 1 {
			return objs.NodeClasses[0], gvk, nil
		}
		return nil, gvk, fmt.Errorf("decoding %s", kind)
	}
	if !l.scheme.Recognizes(gvk) {
		return nil, gvk, nil
	}
	obj, _, err := l.decoder.Decode(data, nil, nil)
	if err != nil {
		return nil, gvk, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, gvk, nil
	}
	co.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return co, gvk, nil
}

// parseScenario decodes a Scenario strictly.
func (l *loader) parseScenario(source string, m map[string]any) *Scenario {
	l.scSource, l.scName = source, nameOf(m)
	unknownFields(m, reflect.TypeOf(Scenario{}), "", l.scenarioError)
	data, err := json.Marshal(m)
	if err != nil {
		l.scenarioError("", err.Error(), "write the Scenario as YAML or JSON")
		return nil
	}
	sc := &Scenario{}
	if err := json.Unmarshal(data, sc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// encoding/json names the field without list indexes: find
			// which element holds the value of the wrong type.
			field := te.Field
			kind, _, _ := strings.Cut(te.Value, " ") // "number 1e400" is a number
			if indexed, ok := locateField(m, strings.Split(te.Field, "."), "", kind); ok {
				field = indexed
			}
			l.scenarioError(field, fmt.Sprintf("expected %s, found %s", describeType(te.Type), withArticle(te.Value)), "write the field as "+describeType(te.Type))
		} else {
			l.scenarioError("", err.Error(), "fix the Scenario's syntax")
		}
		return sc
	}
	return sc
}

// locateField finds, under v, the first value along the dotted path segs
// (list elements are searched in order) whose JSON kind is kind, and
// returns its path with list indexes, as "spec.events[1].apply".
func locateField(v any, segs []string, prefix string, kind string) (string, bool) {
	if len(segs) == 0 {
		return prefix, jsonKindOf(v) == kind
	}
	if list, ok := v.([]any); ok {
		for i, e := range list {
			if p, ok := locateField(e, segs, fmt.Sprintf("%s[%d]", prefix, i), kind); ok {
				return p, true
			}
		}
		return "", false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	child, ok := m[segs[0]]
	if !ok {
		return "", false
	}
	next := segs[0]
	if prefix != "" {
		next = prefix + "." + segs[0]
	}
	return locateField(child, segs[1:], next, kind)
}

// jsonKindOf names a decoded JSON value's kind as encoding/json's type
// errors do.
func jsonKindOf(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	default:
		return "number"
	}
}

// withArticle puts "a" or "an" before a JSON kind.
func withArticle(kind string) string {
	if kind == "" {
		return "a value of another type"
	}
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string (durations are strings such as 90s or 5m)"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint64, reflect.Uint32:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Bool:
		return "true or false"
	}
	return t.String()
}

// duration parses a Duration field; empty gives def.
func (l *loader) duration(d Duration, field string, def time.Duration, positive bool) time.Duration {
	if d == "" {
		return def
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		l.scenarioError(field, fmt.Sprintf("%q is not a duration", string(d)), "write a Go duration such as 90s, 45m or 3h (no days: 24h)")
		return def
	}
	if v < 0 || (positive && v == 0) {
		l.scenarioError(field, fmt.Sprintf("%q must be positive", string(d)), "write a positive duration such as 1m")
		return def
	}
	return v
}

// resolve checks the scenario and fills in every default.
func (l *loader) resolve(sc *Scenario, objects []Object, v *validation.Validator) *Run {
	if sc == nil {
		sc = &Scenario{}
	}
	s := sc.Spec
	run := &Run{Name: sc.Metadata.Name, Source: l.scSource, Seed: DefaultSeed, Start: simclock.DefaultStart, Annotations: sc.Metadata.Annotations}
	if run.Name == "" {
		run.Name = "scenario"
	}
	if s.Seed != nil {
		run.Seed = *s.Seed
	}
	if s.Start != "" {
		t, err := time.Parse(time.RFC3339, s.Start)
		if err != nil {
			l.scenarioError("spec.start", fmt.Sprintf("%q is not an RFC 3339 time", s.Start), "write a UTC time such as 2026-03-02T10:00:00Z")
		} else {
			run.Start = t.UTC()
		}
	}
	run.Duration = l.duration(s.Duration, "spec.duration", DefaultDuration, true)
	run.SampleEvery = l.duration(s.SampleEvery, "spec.sampleEvery", DefaultSampleEvery, true)
	run.PodStartTime = l.duration(s.Cluster.PodStartTime, "spec.cluster.podStartTime", DefaultPodStartTime, false)
	run.KubeAPIQPS, run.KubeAPIBurst = l.controllerManager(s.Cluster.ControllerManager)
	l.runBounds(s, run)
	run.KubernetesVersion = s.Cluster.KubernetesVersion
	if run.KubernetesVersion == "" {
		run.KubernetesVersion = DefaultKubernetesVersion
	}
	if !regexp.MustCompile(`^1\.[0-9]{2}$`).MatchString(run.KubernetesVersion) {
		l.scenarioError("spec.cluster.kubernetesVersion", fmt.Sprintf("%q is not a Kubernetes minor version", run.KubernetesVersion), "write it as 1.31")
	}

	events := l.events(s.Events, run, v)
	l.podBounds(objects, events)
	all := slices.Clone(objects)
	for _, e := range events {
		if e.Object != nil {
			all = append(all, Object{Object: e.Object, GVK: e.GVK})
		}
	}
	run.ClusterName = s.Cluster.Name
	if run.ClusterName == "" {
		run.ClusterName = discoveryName(all)
	}
	run.AWS = l.aws(s.AWS, run, all, s.Events)
	l.instanceTypes(s.AWS.InstanceTypes)
	l.eventTargets(events, run.AWS, objects)
	run.Controller = l.controller(s.Controller, run)
	run.Objects = order(withNamespaces(objects, events))
	run.Events = events
	return run
}

// controllerManager checks kube-controller-manager's client settings and
// fills in their defaults.
func (l *loader) controllerManager(cm ControllerManager) (qps float64, burst int) {
	qps, burst = DefaultKubeAPIQPS, DefaultKubeAPIBurst
	if cm.KubeAPIQPS != nil {
		if v := *cm.KubeAPIQPS; v > MaxKubeAPIQPS || (v > 0 && v < MinKubeAPIQPS) {
			l.scenarioError("spec.cluster.controllerManager.kubeAPIQPS", fmt.Sprintf("%v requests a second is outside %v to %v", v, MinKubeAPIQPS, MaxKubeAPIQPS),
				fmt.Sprintf("write a number in that range such as %d (--kube-api-qps)", DefaultKubeAPIQPS))
		} else if v > 0 {
			qps = v
		} else {
			l.scenarioError("spec.cluster.controllerManager.kubeAPIQPS", fmt.Sprintf("%v requests a second would stop the controllers", v),
				fmt.Sprintf("write a positive number such as %d (--kube-api-qps)", DefaultKubeAPIQPS))
		}
	}
	if cm.KubeAPIBurst != nil {
		if v := *cm.KubeAPIBurst; v > MaxKubeAPIBurst {
			l.scenarioError("spec.cluster.controllerManager.kubeAPIBurst", fmt.Sprintf("a burst of %d is more than %d", v, MaxKubeAPIBurst),
				fmt.Sprintf("write a whole number from 1 to %d such as %d (--kube-api-burst)", MaxKubeAPIBurst, DefaultKubeAPIBurst))
		} else if v >= 1 {
			burst = v
		} else {
			l.scenarioError("spec.cluster.controllerManager.kubeAPIBurst", fmt.Sprintf("a burst of %d lets no request through", v),
				fmt.Sprintf("write a whole number of at least 1 such as %d (--kube-api-burst)", DefaultKubeAPIBurst))
		}
	}
	return qps, burst
}

// discoveryName returns the karpenter.sh/discovery value the node classes
// select subnets by, when they agree on one.
func discoveryName(objs []Object) string {
	names := map[string]bool{}
	for _, o := range objs {
		nc, ok := o.Object.(*awsv1.EC2NodeClass)
		if !ok {
			continue
		}
		for _, t := range nc.Spec.SubnetSelectorTerms {
			if v := t.Tags[fake.DiscoveryTag]; v != "" && v != "*" {
				names[v] = true
			}
		}
	}
	if len(names) == 1 {
		for n := range names {
			return n
		}
	}
	return DefaultClusterName
}

var reservationID = regexp.MustCompile(`^cr-[0-9a-f]{17}$`)

// capacityReservations checks and resolves spec.aws.capacityReservations.
func (l *loader) capacityReservations(in []CapacityReservation, zones []string, start time.Time) []CapacityReservationConfig {
	var out []CapacityReservationConfig
	ids := map[string]bool{}
	for i, r := range in {
		field := fmt.Sprintf("spec.aws.capacityReservations[%d]", i)
		c := CapacityReservationConfig{
			ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Count: r.Count, Type: r.Type,
			InstanceMatchCriteria: r.InstanceMatchCriteria, Interruptible: r.Interruptible, Tags: r.Tags,
		}
		if c.ID != "" {
			if !reservationID.MatchString(c.ID) {
				l.scenarioError(field+".id", fmt.Sprintf("%q is not a capacity reservation ID", c.ID), "write cr- followed by 17 hex digits, or leave it out for a generated one")
			}
			if ids[c.ID] {
				l.scenarioError(field+".id", fmt.Sprintf("capacity reservation %s is listed twice", c.ID), "give each reservation its own ID")
			}
			ids[c.ID] = true
		}
		if c.InstanceType == "" {
			l.scenarioError(field+".instanceType", "no instance type", "write the instance type it reserves, such as m6i.large")
		}
		if !slices.Contains(zones, c.Zone) {
			l.scenarioError(field+".zone", fmt.Sprintf("zone %q is not one of the account's zones %v", c.Zone, zones), "use one of spec.aws.zones")
		}
		if c.Count < 1 {
			l.scenarioError(field+".count", fmt.Sprintf("%d instances", c.Count), "write how many instances it holds, at least 1")
		}
		switch c.Type {
		case "":
			c.Type = "default"
		case "default", "capacity-block":
		default:
			l.scenarioError(field+".type", fmt.Sprintf("%q is not a reservation type", c.Type), "use default or capacity-block")
		}
		switch c.InstanceMatchCriteria {
		case "":
			c.InstanceMatchCriteria = "targeted"
		case "targeted", "open":
		default:
			l.scenarioError(field+".instanceMatchCriteria", fmt.Sprintf("%q is not a match criteria", c.InstanceMatchCriteria), "use targeted or open")
		}
		if end := l.duration(r.End, field+".end", 0, true); end > 0 {
			c.End = start.Add(end)
		} else if c.Type == "capacity-block" && r.End == "" {
			l.scenarioError(field+".end", "a capacity block without an end", "write when it ends, as a duration from the start such as 6h")
		}
		out = append(out, c)
	}
	return out
}

var amiID = regexp.MustCompile(`\bami-[0-9a-f]{8,17}\b`)

func (l *loader) aws(a AWS, run *Run, objs []Object, events []Event) AWSConfig {
	c := AWSConfig{
		Region: a.Region, Zones: slices.Clone(a.Zones), Subnets: a.Subnets, SecurityGroups: a.SecurityGroups,
		PassRole: a.PassRole, AccessEntries: a.AccessEntries, InterruptionQueue: a.InterruptionQueue,
		InstanceTypes: a.InstanceTypes, PlacementGroups: slices.Clone(a.PlacementGroups),
		ControllerPolicy: a.ControllerPolicy,
	}
	switch c.ControllerPolicy {
	case "", ControllerPolicyKarpenter, ControllerPolicyGenerated:
	default:
		l.scenarioError("spec.aws.controllerPolicy", fmt.Sprintf("%q is not a controller policy", c.ControllerPolicy),
			fmt.Sprintf("use %s (Karpenter's reference policy) or %s (stevedore iam-policy's), or leave it out to allow every call", ControllerPolicyKarpenter, ControllerPolicyGenerated))
	}
	for i, g := range c.PlacementGroups {
		if !slices.Contains([]string{"cluster", "partition", "spread"}, g.Strategy) {
			l.scenarioError(fmt.Sprintf("spec.aws.placementGroups[%d].strategy", i), fmt.Sprintf("strategy %q is not an EC2 placement strategy", g.Strategy),
				"use cluster, partition or spread")
		}
	}
	if c.Region == "" {
		c.Region = fake.DefaultRegion
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{c.Region + "a", c.Region + "b", c.Region + "c"}
	}
	for i, s := range c.Subnets {
		if !slices.Contains(c.Zones, s.Zone) {
			l.scenarioError(fmt.Sprintf("spec.aws.subnets[%d].zone", i), fmt.Sprintf("zone %q is not one of the account's zones %v", s.Zone, c.Zones),
				"use one of spec.aws.zones, or add the zone there")
		}
		if s.FreeIPs != nil && (*s.FreeIPs < 0 || *s.FreeIPs > MaxFreeIPs) {
			l.scenarioError(fmt.Sprintf("spec.aws.subnets[%d].freeIPs", i), fmt.Sprintf("%d free addresses is outside 0 to %d", *s.FreeIPs, MaxFreeIPs),
				fmt.Sprintf("write at most %d (a /16), or leave it out for a /20's", MaxFreeIPs))
		}
	}
	c.CapacityReservations = l.capacityReservations(a.CapacityReservations, c.Zones, run.Start)
	c.BootTime = l.duration(a.BootTime, "spec.aws.bootTime", DefaultBootTime, false)
	c.ReadyTime = l.duration(a.ReadyTime, "spec.aws.readyTime", DefaultReadyTime, false)
	l.startupBound("spec.aws.bootTime", c.BootTime)
	l.startupBound("spec.aws.readyTime", c.ReadyTime)
	c.SpotPriceFraction = DefaultSpotPriceFraction
	if a.SpotPriceFraction != nil {
		c.SpotPriceFraction = *a.SpotPriceFraction
		if c.SpotPriceFraction <= 0 || c.SpotPriceFraction > 1 {
			l.scenarioError("spec.aws.spotPriceFraction", fmt.Sprintf("%v is not a fraction", c.SpotPriceFraction), "write a number above 0 and at most 1, such as 0.35")
			c.SpotPriceFraction = DefaultSpotPriceFraction
		}
	}
	roles := map[string]bool{"KarpenterNodeRole-" + run.ClusterName: true}
	for _, r := range a.Roles {
		roles[r] = true
	}
	declared := map[string]bool{}
	for i, img := range a.Images {
		field := fmt.Sprintf("spec.aws.images[%d]", i)
		ic := ImageConfig{ID: img.ID, Name: img.Name, Arch: img.Arch, Owner: img.Owner, Tags: img.Tags, Created: run.Start.Add(-30 * 24 * time.Hour)}
		if !amiID.MatchString(img.ID) {
			l.scenarioError(field+".id", fmt.Sprintf("%q is not an AMI ID", img.ID), "write it as ami- followed by 8 or 17 hex digits")
		}
		switch ic.Arch {
		case "":
			ic.Arch = "x86_64"
		case "x86_64", "arm64":
		case "amd64":
			ic.Arch = "x86_64"
		default:
			l.scenarioError(field+".arch", fmt.Sprintf("%q is not an architecture", img.Arch), "use x86_64 or arm64")
		}
		if img.Created != "" {
			t, err := time.Parse(time.RFC3339, img.Created)
			if err != nil {
				l.scenarioError(field+".created", fmt.Sprintf("%q is not an RFC 3339 time", img.Created), "write a time such as 2024-08-07T00:00:00Z")
			} else {
				ic.Created = t.UTC()
			}
		}
		if declared[img.ID] {
			l.scenarioError(field+".id", fmt.Sprintf("image %s is listed twice", img.ID), "list each image once")
		}
		declared[img.ID] = true
		c.Images = append(c.Images, ic)
	}
	for i := range a.CurrentImages {
		ri := a.CurrentImages[i]
		field := fmt.Sprintf("spec.aws.currentImages[%d]", i)
		l.releaseEvent(&ri, field)
		if ri.ID == "" {
			l.scenarioError(field+".id", "a current image needs its AMI ID", "write the ID the EC2NodeClass's status.amis lists")
		} else if declared[ri.ID] {
			l.scenarioError(field+".id", fmt.Sprintf("image %s is listed twice", ri.ID), "list each image once")
		}
		declared[ri.ID] = true
		c.CurrentImages = append(c.CurrentImages, ri)
	}
	// Node classes and events may name images and roles the scenario does
	// not list: create them, so that a bare set of manifests runs.
	referenced := map[string]bool{}
	for _, o := range objs {
		nc, ok := o.Object.(*awsv1.EC2NodeClass)
		if !ok {
			continue
		}
		if nc.Spec.Role != "" {
			roles[nc.Spec.Role] = true
		}
		for _, t := range nc.Spec.AMISelectorTerms {
			if t.ID != "" {
				referenced[t.ID] = true
			}
		}
	}
	for _, e := range events {
		if e.Patch != nil {
			for _, id := range amiID.FindAllString(string(e.Patch.Patch), -1) {
				referenced[id] = true
			}
		}
	}
	var auto []string
	for id := range referenced {
		if !declared[id] && amiID.MatchString(id) {
			auto = append(auto, id)
		}
	}
	sort.Strings(auto)
	for _, id := range auto {
		c.Images = append(c.Images, ImageConfig{ID: id, Name: id, Arch: "x86_64", Created: run.Start.Add(-30 * 24 * time.Hour), Auto: true})
	}
	for r := range roles {
		c.Roles = append(c.Roles, r)
	}
	sort.Strings(c.Roles)
	return c
}

// controllerFlags are the settings a scenario may not set under controller,
// with the field that sets them instead.
var controllerFlags = map[string]string{
	settings.FlagClusterName:        "spec.cluster.name",
	settings.FlagClusterEndpoint:    "the simulated cluster's endpoint, which is fixed",
	settings.FlagClusterCABundle:    "the simulated cluster's CA bundle, which is fixed",
	settings.FlagInterruptionQueue:  "spec.aws.interruptionQueue",
	settings.FlagAssumeRoleARN:      "nothing: the simulated controller needs no credentials",
	settings.FlagAssumeRoleDuration: "nothing: the simulated controller needs no credentials",
}

func (l *loader) controller(values map[string]any, run *Run) ControllerConfig {
	c := ControllerConfig{Settings: settings.Default(), ReservedCapacity: true}
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_ = c.Settings.AddFlags(fs, func(string) string { return "" })
	fs.DurationVar(&c.BatchIdle, "batch-idle-duration", provisioning.DefaultBatchIdle, "")
	fs.DurationVar(&c.BatchMax, "batch-max-duration", provisioning.DefaultBatchMax, "")
	policy := string(packer.DefaultPreferencePolicy)
	fs.StringVar(&policy, "preference-policy", policy, "")
	order := string(packer.EqualWeightName)
	fs.StringVar(&order, "nodepool-equal-weight-order", order, "")
	minValues := string(packer.MinValuesStrict)
	fs.StringVar(&minValues, "min-values-policy", minValues, "")
	gates := ""
	fs.StringVar(&gates, "feature-gates", "", "")
	fs.DurationVar(&c.ValidationDelay, "disruption-validation-delay", disruptionctl.DefaultValidationDelay, "")
	fs.DurationVar(&c.ReplacementTimeout, "disruption-replacement-timeout", disruptionctl.DefaultReplacementTimeout, "")
	fs.IntVar(&c.MaxUnhealthyPercent, "node-repair-max-unhealthy-percent", 20, "")
	fs.BoolVar(&c.ActOnRebalance, "interruption-act-on-rebalance", false, "")
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := "spec.controller." + k
		if instead, ok := controllerFlags[k]; ok {
			l.scenarioError(field, fmt.Sprintf("%s is not a setting a scenario sets here", k), "set "+instead)
			continue
		}
		if fs.Lookup(k) == nil {
			var names []string
			fs.VisitAll(func(f *pflag.Flag) {
				if _, ok := controllerFlags[f.Name]; !ok {
					names = append(names, f.Name)
				}
			})
			l.scenarioError(field, fmt.Sprintf("unknown controller setting %q", k), "use one of "+strings.Join(names, ", ")+suggest(k, names))
			continue
		}
		if err := fs.Set(k, fmt.Sprint(values[k])); err != nil {
			l.scenarioError(field, fmt.Sprintf("%v: %v", values[k], err), "write a value of the kind `stevedore controller --help` documents for --"+k)
		}
	}
	c.Settings.ClusterName = run.ClusterName
	c.Settings.InterruptionQueue = run.AWS.InterruptionQueue
	c.PreferencePolicy = packer.PreferencePolicy(policy)
	c.EqualWeightOrder = packer.EqualWeightOrder(order)
	c.MinValuesPolicy = packer.MinValuesPolicy(minValues)
	for _, kv := range strings.Split(gates, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		field := "spec.controller.feature-gates"
		switch {
		case slices.Contains(ignoredGates, k):
		case err != nil:
			l.scenarioError(field, fmt.Sprintf("%q: the value of %s is not true or false", kv, k), "write gates as Name=true, separated by commas")
		case k == "NodeRepair":
			c.NodeRepair = on
		case k == "SpotToSpotConsolidation":
			c.SpotToSpot = on
		case k == "ReservedCapacity":
			c.ReservedCapacity = on
		case k == "StaticCapacity":
			c.StaticCapacity = on
		case k == "NodeOverlay":
			c.NodeOverlay = on
		case k == "CapacityBuffer":
			c.CapacityBuffer = on
		default:
			l.scenarioError(field, fmt.Sprintf("unknown feature gate %q", k), "use "+strings.Join(featureGates, " or ")+suggest(k, featureGates))
		}
	}
	switch c.PreferencePolicy {
	case packer.PreferenceScore, packer.PreferenceRespect, packer.PreferenceIgnore:
	default:
		l.scenarioError("spec.controller.preference-policy", fmt.Sprintf("%q is not a policy", policy), "use Score, Respect or Ignore")
	}
	switch c.EqualWeightOrder {
	case packer.EqualWeightName, packer.EqualWeightPrice:
	default:
		l.scenarioError("spec.controller.nodepool-equal-weight-order", fmt.Sprintf("%q is not an order", order), "use Name (Karpenter's order) or Price")
	}
	switch c.MinValuesPolicy {
	case packer.MinValuesStrict, packer.MinValuesBestEffort:
	default:
		l.scenarioError("spec.controller.min-values-policy", fmt.Sprintf("%q is not a policy", minValues), "use Strict or BestEffort")
	}
	if c.ValidationDelay <= 0 || c.ReplacementTimeout <= 0 {
		l.scenarioError("spec.controller", "disruption-validation-delay and disruption-replacement-timeout must be positive",
			"write durations such as 15s and 10m")
	}
	if c.MaxUnhealthyPercent < 1 || c.MaxUnhealthyPercent > 100 {
		l.scenarioError("spec.controller.node-repair-max-unhealthy-percent", fmt.Sprintf("%d is not a percentage from 1 to 100", c.MaxUnhealthyPercent),
			"write a whole number from 1 to 100")
	}
	if c.BatchIdle <= 0 || c.BatchMax <= 0 || c.BatchIdle > c.BatchMax {
		l.scenarioError("spec.controller.batch-idle-duration", "the batch windows must be positive, the idle one no longer than the max one",
			"set batch-idle-duration at most batch-max-duration, for example 1s and 10s")
	}
	if err := c.Settings.Validate(); err != nil {
		l.scenarioError("spec.controller", err.Error(), "fix the setting named")
	}
	return c
}

// withNamespaces adds a Namespace for every namespace an object lives in that
// no manifest creates, so that a bare set of workloads applies.
func withNamespaces(objs []Object, events []TimedEvent) []Object {
	have := map[string]bool{}
	for _, o := range objs {
		if ns, ok := o.Object.(*corev1.Namespace); ok {
			have[ns.Name] = true
		}
	}
	need := map[string]bool{metav1.NamespaceDefault: true, metav1.NamespaceSystem: true}
	for _, o := range objs {
		if namespaced(o.GVK) {
			need[namespaceOf(o.Object)] = true
		}
	}
	for _, e := range events {
		if e.Object != nil && namespaced(e.GVK) {
			need[namespaceOf(e.Object)] = true
		}
	}
	var names []string
	for n := range need {
		if !have[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]Object, 0, len(objs)+len(names))
	for _, n := range names {
		out = append(out, Object{Source: "(implied)", Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, GVK: corev1.SchemeGroupVersion.WithKind("Namespace")})
	}
	return append(out, objs...)
}

func namespaceOf(o client.Object) string {
	if o.GetNamespace() == "" {
		return metav1.NamespaceDefault
	}
	return o.GetNamespace()
}

// applyOrder is the order kinds are applied in at the start.
var applyOrder = []string{"Namespace", "PriorityClass", "LimitRange", "StorageClass", "EC2NodeClass", "NodePool", "NodeOverlay", "NodeClaim", "Node",
	"PersistentVolume", "PersistentVolumeClaim", "PodDisruptionBudget", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "Pod"}

func order(objs []Object) []Object {
	rank := func(o Object) int {
		if i := slices.Index(applyOrder, o.GVK.Kind); i >= 0 {
			return i
		}
		return len(applyOrder)
	}
	slices.SortStableFunc(objs, func(a, b Object) int { return rank(a) - rank(b) })
	return objs
}

func namespaced(gvk schema.GroupVersionKind) bool { return apiserver.Namespaced(gvk) }
